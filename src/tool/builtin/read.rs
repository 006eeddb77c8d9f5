//! `read_file`: shows a window of a text file as numbered lines, with a hint for the next
//! window. Files up to `text::FULL_LOAD_MAX` are decoded whole (any supported encoding);
//! larger ones are streamed line by line as UTF-8 so a huge log can still be paged.

use std::borrow::Cow;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use serde_json::{json, Value};

use crate::cancel::CancelToken;
use crate::tool::text::{self, NotText};
use crate::tool::{args, Subjects, Tool, ToolContext, ToolError};

const DEFAULT_LIMIT: u64 = 2000;

/// About 25k tokens: past this the output stops early and the hint says where to resume.
const MAX_OUTPUT_BYTES: usize = 100 * 1024;

/// How much of a streamed file is checked for binary content before paging it.
const SNIFF_BYTES: usize = 8192;

pub struct ReadFile;

const DESCRIPTION: &str = "\
Reads a text file and returns its lines numbered like `cat -n` (line number, tab, text). \
Returns up to 2000 lines starting at `offset` (1-based, default 1); for long files page with \
`offset` and `limit` as the hint at the end of the output says. Lines longer than 2000 \
characters are cut. Decodes UTF-8 (with or without BOM) and UTF-16. Refuses directories (use \
ls) and binary files. Read a file before editing it, and copy text into edit_file without the \
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

    fn read_only(&self) -> bool {
        true
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
        let meta = fs::metadata(&path).map_err(|e| open_failure(shown, &e))?;
        if meta.is_dir() {
            return Err(ToolError::Failed(format!(
                "{shown} is a directory, not a file; use ls to list its contents"
            )));
        }
        if !meta.is_file() {
            return Err(ToolError::Failed(format!(
                "{shown} is not a regular file (it is a device, socket or pipe); read_file only \
                 reads files"
            )));
        }
        if meta.len() <= text::FULL_LOAD_MAX {
            read_whole(&path, &window, &ctx.cancel)
        } else {
            read_streaming(&path, &window, &ctx.cancel)
        }
    }
}

/// The lines the model asked for and the path as it wrote it.
struct Window<'a> {
    offset: u64,
    limit: u64,
    shown: &'a str,
}

fn open_failure(shown: &str, err: &io::Error) -> ToolError {
    match err.kind() {
        io::ErrorKind::NotFound => ToolError::Failed(format!(
            "{shown} does not exist; use glob or ls to find the right path"
        )),
        _ => text::io_failure("cannot read", shown, err),
    }
}

fn read_whole(path: &Path, window: &Window, cancel: &CancelToken) -> Result<String, ToolError> {
    let bytes = fs::read(path).map_err(|e| open_failure(window.shown, &e))?;
    let (content, _) =
        text::decode(&bytes).map_err(|e| ToolError::Failed(e.describe(window.shown)))?;
    let lines = content.lines().map(|l| Ok(Cow::Borrowed(l.as_bytes())));
    render(lines, window, cancel)
}

fn read_streaming(path: &Path, window: &Window, cancel: &CancelToken) -> Result<String, ToolError> {
    let file = File::open(path).map_err(|e| open_failure(window.shown, &e))?;
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    (&mut reader)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| open_failure(window.shown, &e))?;
    sniff_large(&head, window.shown)?;
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&head).to_vec();
    let lines = StreamLines {
        reader: io::Cursor::new(head).chain(reader),
        done: false,
    };
    render(lines, window, cancel)
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

/// Raw lines of a stream, without their `\n`; decoding waits until a line is shown.
struct StreamLines<R> {
    reader: R,
    done: bool,
}

impl<R: BufRead> Iterator for StreamLines<R> {
    type Item = io::Result<Cow<'static, [u8]>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let mut line = Vec::new();
        match self.reader.read_until(b'\n', &mut line) {
            Ok(0) => {
                self.done = true;
                None
            }
            Ok(_) => {
                if line.ends_with(b"\n") {
                    line.pop();
                }
                Some(Ok(Cow::Owned(line)))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// Numbers the lines in the window, counts the rest, and adds the continuation hint.
fn render<'a, I>(lines: I, window: &Window, cancel: &CancelToken) -> Result<String, ToolError>
where
    I: Iterator<Item = io::Result<Cow<'a, [u8]>>>,
{
    let mut out = String::new();
    let mut total: u64 = 0;
    // The first line not shown after the window started, and whether the byte cap stopped us.
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
        out.push_str(&text::numbered_line(total, &String::from_utf8_lossy(&line)));
    }
    if total == 0 {
        return Ok(format!("{} is empty (no lines)", window.shown));
    }
    if window.offset > total {
        return Err(ToolError::Failed(format!(
            "offset {} is past the end of {}, which has {total} line{}; use an offset from 1 to \
             {total}",
            window.offset,
            window.shown,
            plural(total)
        )));
    }
    if let Some((next, stop)) = resume {
        let remaining = total - next + 1;
        let why = match stop {
            Stop::Limit => String::new(),
            Stop::OutputCap => format!(" (output capped at {} KiB)", MAX_OUTPUT_BYTES / 1024),
        };
        out.push_str(&format!(
            "... {remaining} more line{}{why}; call read_file with offset={next} to continue\n",
            plural(remaining)
        ));
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

    fn lines(n: usize, width: usize) -> Vec<io::Result<Cow<'static, [u8]>>> {
        (0..n).map(|_| Ok(Cow::Owned(vec![b'x'; width]))).collect()
    }

    #[test]
    fn output_cap_stops_early_and_says_where_to_resume() {
        // 200 lines of 1000 bytes exceed the 100 KiB cap after about 100 lines.
        let out = render(
            lines(200, 1000).into_iter(),
            &window(1, 2000),
            &CancelToken::new(),
        )
        .unwrap();
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
        let reader = io::Cursor::new(b"a\n\nb".to_vec());
        let got: Vec<Vec<u8>> = StreamLines {
            reader,
            done: false,
        }
        .map(|l| l.unwrap().into_owned())
        .collect();
        assert_eq!(got, vec![b"a".to_vec(), b"".to_vec(), b"b".to_vec()]);
    }

    #[test]
    fn sniff_rejects_binary_but_tolerates_a_cut_character() {
        assert!(sniff_large(b"abc\0def", "big").is_err());
        assert!(sniff_large(b"abc\xC3", "big").is_ok());
        assert!(sniff_large(b"abc\xFFdef", "big").is_err());
    }
}
