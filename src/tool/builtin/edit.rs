//! `edit_file`: one exact-text replacement in a file, plus the matching engine `multi_edit`
//! shares: line-ending tolerant matching, uniqueness checks with the line numbers of every
//! match, and "did you mean" hints when nothing matches exactly.

use serde_json::{json, Value};

use crate::tool::text::{self, LineEnding};
use crate::tool::{args, Family, Subjects, Tool, ToolContext, ToolError};

pub struct EditFile;

const DESCRIPTION: &str = "\
Replaces exact text in a file. `old_string` must match the file character for character, \
indentation included, and exactly once unless `replace_all` is true; include a few \
surrounding lines to make it unique. Copy the text from read_file output without the \
line-number prefix, and read the file first. Send `\\n` line endings: a CRLF file keeps CRLF. \
To create a file or rewrite it whole use write_file; for several changes to one file use \
multi_edit. An edit may grow a file to at most 10 times its size (at least 1 MiB, at most \
32 MiB).";

impl Tool for EditFile {
    fn name(&self) -> &str {
        "edit_file"
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
                    "description": "File to edit, absolute or relative to the workspace root"
                },
                "old_string": {
                    "type": "string",
                    "description": "The exact text to replace; must occur exactly once unless replace_all is true"
                },
                "new_string": {
                    "type": "string",
                    "description": "The text to put in its place (must differ from old_string)"
                },
                "replace_all": {
                    "type": "boolean",
                    "description": "Replace every occurrence of old_string (default false)"
                }
            },
            "required": ["path", "old_string", "new_string"]
        })
    }

    fn family(&self) -> Family {
        Family::Writer
    }

    fn subjects(&self) -> Subjects {
        Subjects::Paths {
            keys: &["path"],
            default: None,
        }
    }

    fn execute(&self, args: &Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let shown = args::required_str(args, "path")?;
        let edit = Edit::parse(args).map_err(|e| ToolError::InvalidArgs(e.to_string()))?;
        let file = text::load(&ctx.resolve_write(shown)?, shown)?;
        let applied = apply(&file.text, &edit, result_limit(file.text.len()))
            .map_err(|failure| ToolError::Failed(failure.describe(shown, None)))?;
        text::save(&file, &applied.text, file.encoding, shown)?;
        let count = match applied.count {
            1 => "1 occurrence".to_string(),
            n => format!("{n} occurrences (the first is shown)"),
        };
        Ok(format!(
            "Edited {shown}: replaced {count}.\n{}",
            applied.snippet()
        ))
    }
}

/// One replacement as the model asked for it.
pub(crate) struct Edit<'a> {
    pub old: &'a str,
    pub new: &'a str,
    pub replace_all: bool,
}

/// Why the arguments of one edit are unusable, before the file is even read.
#[derive(Debug)]
pub(crate) enum EditArgError {
    Args(ToolError),
    EmptyOld,
    Identical,
}

impl std::fmt::Display for EditArgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // The bare detail: callers add their own prefix.
            EditArgError::Args(ToolError::InvalidArgs(detail)) => write!(f, "{detail}"),
            EditArgError::Args(other) => write!(f, "{other}"),
            EditArgError::EmptyOld => write!(
                f,
                "`old_string` is empty; give the exact text to replace, or use write_file to \
                 create a file or replace its whole content"
            ),
            EditArgError::Identical => write!(
                f,
                "`old_string` and `new_string` are identical, so the edit would change nothing"
            ),
        }
    }
}

impl<'a> Edit<'a> {
    /// Reads `old_string`, `new_string` and `replace_all` from one JSON object.
    pub fn parse(value: &'a Value) -> Result<Edit<'a>, EditArgError> {
        let old = args::required_str(value, "old_string").map_err(EditArgError::Args)?;
        let new = args::required_str(value, "new_string").map_err(EditArgError::Args)?;
        let replace_all = args::optional_bool(value, "replace_all")
            .map_err(EditArgError::Args)?
            .unwrap_or(false);
        if old.is_empty() {
            return Err(EditArgError::EmptyOld);
        }
        if old == new {
            return Err(EditArgError::Identical);
        }
        Ok(Edit {
            old,
            new,
            replace_all,
        })
    }
}

/// The text after an edit and where the change landed.
#[derive(Debug)]
pub(crate) struct Applied {
    pub text: String,
    pub count: usize,
    /// Line range (1-based, inclusive) of the first replacement in the new text.
    pub first_line: usize,
    pub last_line: usize,
}

impl Applied {
    /// The changed lines with two lines of context, numbered like read_file.
    pub fn snippet(&self) -> String {
        const CONTEXT: usize = 2;
        const MAX_LINES: usize = 16;
        let first = self.first_line.saturating_sub(CONTEXT).max(1);
        let last = (self.last_line + CONTEXT).min(first + MAX_LINES - 1);
        text::numbered_range(&self.text, first, last)
    }
}

/// Why an edit could not be applied to the text.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum EditFailure {
    NotFound {
        hint: Option<String>,
    },
    NotUnique {
        count: usize,
        lines: Vec<usize>,
    },
    NoChange,
    /// The result would be `size` bytes, more than `limit`.
    TooLarge {
        size: u128,
        limit: usize,
    },
}

impl EditFailure {
    /// The model-facing explanation. `after` names earlier edits whose result the line numbers
    /// refer to (multi_edit).
    pub fn describe(&self, shown: &str, after: Option<&str>) -> String {
        match self {
            EditFailure::NotFound { hint } => {
                let advice = hint.clone().unwrap_or_else(|| {
                    "read the file again and copy the exact text, including whitespace and \
                     indentation"
                        .into()
                });
                format!("`old_string` was not found in {shown}; {advice}")
            }
            EditFailure::NotUnique { count, lines } => {
                let shown_lines: Vec<String> = lines
                    .iter()
                    .take(SHOWN_MATCH_LINES)
                    .map(|l| l.to_string())
                    .collect();
                let more = if *count > SHOWN_MATCH_LINES {
                    ", ..."
                } else {
                    ""
                };
                let base = after
                    .map(|a| format!(" (line numbers are of the text after {a})"))
                    .unwrap_or_default();
                format!(
                    "`old_string` matches {count} times in {shown} (lines {}{more}){base}; \
                     include more surrounding lines to make it unique, or set `replace_all` to \
                     true to replace every occurrence",
                    shown_lines.join(", ")
                )
            }
            EditFailure::NoChange => format!(
                "the edit would leave {shown} unchanged (old and new text differ only in line \
                 endings); nothing to do"
            ),
            EditFailure::TooLarge { size, limit } => format!(
                "the edit would make {shown} {size} bytes, over the {} limit for one edit call \
                 ({GROWTH_FACTOR} times the file's size, at least {}, at most {}); write the new \
                 content with write_file, or edit in smaller steps",
                size_label(*limit),
                size_label(RESULT_FLOOR),
                size_label(RESULT_MAX)
            ),
        }
    }
}

/// An edit may make a file this many times as large as it was before the call...
const GROWTH_FACTOR: usize = 10;
/// ...or this large, whichever is more...
const RESULT_FLOOR: usize = 1024 * 1024;
/// ...but never larger than this: the result is built in memory, so one call must not be able
/// to demand gigabytes (`replace_all` of one character by a long string, or `multi_edit`
/// doubling the text edit after edit).
const RESULT_MAX: usize = 32 * 1024 * 1024;

/// The largest text (in UTF-8 bytes) an edit call may produce from a file of `original` bytes.
pub(crate) fn result_limit(original: usize) -> usize {
    original
        .saturating_mul(GROWTH_FACTOR)
        .clamp(RESULT_FLOOR, RESULT_MAX)
}

/// Applies one edit to `text`, refusing a result longer than `limit` bytes before building it.
/// The file's line endings win: a `\n` in the model's strings matches and writes `\r\n` in a
/// CRLF file, and the reverse for a `\r\n` sent to an LF file.
pub(crate) fn apply(text: &str, edit: &Edit, limit: usize) -> Result<Applied, EditFailure> {
    let ending = LineEnding::detect(text);
    let Some((old, variant)) = locate(text, edit.old, ending) else {
        return Err(EditFailure::NotFound {
            hint: not_found_hint(text, edit.old),
        });
    };
    let new = match (variant, ending) {
        (Variant::Crlf, _) | (Variant::AsIs, LineEnding::Crlf) => text::to_crlf(edit.new),
        (Variant::Lf, _) => text::to_lf(edit.new),
        (Variant::AsIs, LineEnding::Lf) => edit.new.into(),
    };
    let found = Matches::of(text, &old);
    if found.count > 1 && !edit.replace_all {
        return Err(EditFailure::NotUnique {
            count: found.count,
            lines: found.lines,
        });
    }
    if old == new {
        return Err(EditFailure::NoChange);
    }
    // The size follows from the match count, so a blow-up is refused before any allocation.
    let size = (text.len() as u128) - (found.count as u128) * (old.len() as u128)
        + (found.count as u128) * (new.len() as u128);
    if size > limit as u128 {
        return Err(EditFailure::TooLarge { size, limit });
    }
    let result = if edit.replace_all {
        text.replace(old.as_ref(), &new)
    } else {
        text.replacen(old.as_ref(), &new, 1)
    };
    let first_line = text::line_of(&result, found.first);
    let span = new.trim_end_matches('\n').matches('\n').count();
    Ok(Applied {
        count: found.count,
        first_line,
        last_line: first_line + span,
        text: result,
    })
}

/// The (non-overlapping) occurrences of a string, counted in one pass.
struct Matches {
    count: usize,
    /// Byte offset of the first.
    first: usize,
    /// Line numbers of the first [`SHOWN_MATCH_LINES`] + 1, enough to list them and say more
    /// exist.
    lines: Vec<usize>,
}

const SHOWN_MATCH_LINES: usize = 20;

impl Matches {
    fn of(text: &str, needle: &str) -> Matches {
        let mut found = Matches {
            count: 0,
            first: 0,
            lines: Vec::new(),
        };
        let (mut line, mut counted_to) = (1, 0);
        for (at, _) in text.match_indices(needle) {
            if found.count == 0 {
                found.first = at;
            }
            found.count += 1;
            if found.lines.len() <= SHOWN_MATCH_LINES {
                line += text.as_bytes()[counted_to..at]
                    .iter()
                    .filter(|&&b| b == b'\n')
                    .count();
                counted_to = at;
                found.lines.push(line);
            }
        }
        found
    }
}

/// `1 MiB` for whole mebibytes, a byte count otherwise.
fn size_label(bytes: usize) -> String {
    const MIB: usize = 1024 * 1024;
    match bytes % MIB {
        0 => format!("{} MiB", bytes / MIB),
        _ => format!("{bytes} bytes"),
    }
}

/// Which form of `old_string` matched.
#[derive(Clone, Copy)]
enum Variant {
    AsIs,
    Crlf,
    Lf,
}

/// Finds the form of `old` present in `text`. In a CRLF file the CRLF form is tried first, so a
/// `\n` in `old` never matches the second half of a `\r\n`.
fn locate<'a>(
    text: &str,
    old: &'a str,
    ending: LineEnding,
) -> Option<(std::borrow::Cow<'a, str>, Variant)> {
    let crlf = text::to_crlf(old);
    let lf = text::to_lf(old);
    let mut candidates = vec![(old.into(), Variant::AsIs)];
    let crlf_candidate = (crlf, Variant::Crlf);
    match ending {
        LineEnding::Crlf => candidates.insert(0, crlf_candidate),
        LineEnding::Lf => candidates.push(crlf_candidate),
    }
    candidates.push((lf, Variant::Lf));
    candidates
        .into_iter()
        .find(|(candidate, _)| text.contains(candidate.as_ref()))
}

/// Above this size the whitespace-insensitive search is skipped; the hint is a nicety.
const HINT_SCAN_MAX: usize = 2 * 1024 * 1024;

/// Looks for the near misses models make: read_file line-number prefixes copied along, or
/// whitespace and indentation that differ.
fn not_found_hint(text: &str, old: &str) -> Option<String> {
    if has_line_number_prefixes(old) {
        return Some(
            "it seems to include the line-number prefixes of read_file output (digits and a \
             tab); send only the file text after the tab"
                .into(),
        );
    }
    if text.len() > HINT_SCAN_MAX {
        return None;
    }
    let lines = whitespace_insensitive_matches(text, old);
    if lines.is_empty() {
        return None;
    }
    let list: Vec<String> = lines.iter().take(5).map(|l| l.to_string()).collect();
    Some(format!(
        "text that differs only in whitespace or indentation starts at line {}; read those \
         lines again and copy them exactly, tabs and spaces included",
        list.join(", ")
    ))
}

fn has_line_number_prefixes(old: &str) -> bool {
    old.lines().all(|line| {
        let rest = line.trim_start_matches(' ');
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        digits > 0 && rest[digits..].starts_with('\t')
    })
}

/// Start lines of the places where `old` matches with every whitespace run collapsed.
fn whitespace_insensitive_matches(text: &str, old: &str) -> Vec<usize> {
    let (needle, _) = collapse_whitespace(old);
    let needle = needle.trim();
    if needle.is_empty() {
        return Vec::new();
    }
    let (haystack, origin) = collapse_whitespace(text);
    let mut lines: Vec<usize> = haystack
        .match_indices(needle)
        .map(|(i, _)| text::line_of(text, origin[i]))
        .collect();
    lines.dedup();
    lines
}

/// `text` with each whitespace run replaced by one space, and for every byte of the result
/// the byte offset in `text` it came from.
fn collapse_whitespace(text: &str) -> (String, Vec<usize>) {
    let mut out = String::with_capacity(text.len());
    let mut origin = Vec::with_capacity(text.len());
    let mut in_space = false;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            if !in_space {
                out.push(' ');
                origin.push(i);
            }
            in_space = true;
            continue;
        }
        in_space = false;
        out.push(c);
        origin.extend(std::iter::repeat_n(i, c.len_utf8()));
    }
    (out, origin)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply_unlimited(text: &str, edit: &Edit) -> Result<Applied, EditFailure> {
        apply(text, edit, RESULT_MAX)
    }

    fn edit<'a>(old: &'a str, new: &'a str) -> Edit<'a> {
        Edit {
            old,
            new,
            replace_all: false,
        }
    }

    #[test]
    fn crlf_text_matches_lf_strings_and_gets_crlf_back() {
        let text = "a\r\nb\r\nc\r\n";
        let got = apply_unlimited(text, &edit("a\nb\n", "x\ny\nz\n")).unwrap();
        assert_eq!(got.text, "x\r\ny\r\nz\r\nc\r\n");
        let got = apply_unlimited(text, &edit("b", "B1\nB2")).unwrap();
        assert_eq!(got.text, "a\r\nB1\r\nB2\r\nc\r\n");
        // A leading `\n` must take its `\r` along rather than splitting the pair.
        let got = apply_unlimited(text, &edit("\nb", "\nB")).unwrap();
        assert_eq!(got.text, "a\r\nB\r\nc\r\n");
    }

    #[test]
    fn crlf_strings_match_an_lf_file() {
        let got = apply_unlimited("a\nb\n", &edit("a\r\nb", "x\r\ny")).unwrap();
        assert_eq!(got.text, "x\ny\n");
    }

    #[test]
    fn whitespace_near_miss_names_the_line() {
        let text = "fn main() {\n\tlet x = 1;\n}\n";
        let err = apply_unlimited(text, &edit("    let x = 1;", "let x = 2;")).unwrap_err();
        let EditFailure::NotFound { hint: Some(hint) } = &err else {
            panic!("{err:?}");
        };
        assert!(hint.contains("line 2"), "{hint}");
    }

    #[test]
    fn copied_line_numbers_are_recognised() {
        let err = apply_unlimited("alpha\nbeta\n", &edit("     1\talpha\n     2\tbeta", "x"))
            .unwrap_err();
        let EditFailure::NotFound { hint: Some(hint) } = &err else {
            panic!("{err:?}");
        };
        assert!(hint.contains("line-number prefixes"), "{hint}");
    }

    #[test]
    fn snippet_covers_the_change_with_context() {
        let text: String = (1..=10).map(|i| format!("l{i}\n")).collect();
        let got = apply_unlimited(&text, &edit("l5\n", "five\nFIVE\n")).unwrap();
        let snippet = got.snippet();
        assert!(snippet.starts_with("     3\tl3\n"), "{snippet}");
        assert!(
            snippet.contains("     5\tfive\n     6\tFIVE\n"),
            "{snippet}"
        );
        assert!(snippet.ends_with("     8\tl7\n"), "{snippet}");
    }

    #[test]
    fn the_result_size_is_checked_arithmetically_against_the_limit() {
        assert_eq!(result_limit(0), RESULT_FLOOR);
        assert_eq!(result_limit(200 * 1024), 2000 * 1024);
        assert_eq!(result_limit(10 * 1024 * 1024), RESULT_MAX);
        let all = |old, new| Edit {
            old,
            new,
            replace_all: true,
        };
        // Exactly at the limit is allowed; one byte more is not.
        let got = apply("ab ab", &all("ab", "abc"), 7).unwrap();
        assert_eq!((got.text.as_str(), got.count), ("abc abc", 2));
        assert_eq!(
            apply("ab ab", &all("ab", "abcd"), 8).unwrap_err(),
            EditFailure::TooLarge { size: 9, limit: 8 }
        );
        // Shrinking edits are never refused.
        assert!(apply("aaaa", &all("aa", ""), 1).is_ok());
        let refusal = EditFailure::TooLarge {
            size: 5_000_000,
            limit: RESULT_FLOOR,
        }
        .describe("f.txt", None);
        assert_eq!(
            refusal,
            "the edit would make f.txt 5000000 bytes, over the 1 MiB limit for one edit call \
             (10 times the file's size, at least 1 MiB, at most 32 MiB); write the new content \
             with write_file, or edit in smaller steps"
        );
    }

    #[test]
    fn not_unique_lists_twenty_lines_and_counts_them_all() {
        let text = "x\n".repeat(30);
        let err = apply_unlimited(&text, &edit("x", "y")).unwrap_err();
        let EditFailure::NotUnique { count, lines } = &err else {
            panic!("{err:?}");
        };
        assert_eq!(*count, 30);
        assert_eq!(lines[..3], [1, 2, 3]);
        let message = err.describe("f", None);
        assert!(
            message.contains(
                "matches 30 times in f (lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, \
                              12, 13, 14, 15, 16, 17, 18, 19, 20, ...)"
            ),
            "{message}"
        );
    }
}
