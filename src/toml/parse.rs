//! The TOML 1.0 reader: text into a [`Document`] in which every key and value keeps the byte
//! span it was written at, so the loader can point at `path:line:col`. Serde is `de.rs`'s job.
//!
//! One pass over the bytes, no backtracking; slices are only cut at ASCII bytes, so no
//! indexing can fall off the text or split a character. Which tables may still be added to
//! follows the spec as Python's `tomllib` reads it (the differential test holds us to it):
//! a `[header]` defines a table once, dotted keys extend only tables they made, inline tables
//! and plain arrays are closed.

use std::collections::btree_map::{BTreeMap, Entry as Slot};
use std::ops::Range;

use super::{Error, MAX_DEPTH};

/// A table of the document, keys sorted.
pub type DocTable = BTreeMap<String, Entry>;

/// One key of a table: where the key was written and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub key: Range<usize>,
    pub item: Item,
}

/// A value and where it was written: the token, the brackets of an array or inline table, the
/// `[header]` of a table (the one that defined it), the key of a table made by dotted keys.
/// Values not read from text (see `value.rs`) have empty spans.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub value: DocValue,
    pub span: Range<usize>,
    pub(super) kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum DocValue {
    String(String),
    Integer(i64),
    Float(f64),
    Boolean(bool),
    /// An offset or local date-time, a local date or a local time: the validated text as
    /// written. It deserialises as a string.
    Datetime(String),
    Array(Vec<Item>),
    Table(DocTable),
}

/// How a table or array came to be, which decides what may still add to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A value as written (scalars, plain arrays, inline tables): closed.
    Literal,
    /// A table named on the way to a header's last key: a header may still define it.
    Implicit,
    /// Defined by a `[header]` (or an element of an array of tables).
    Header,
    /// Made by dotted keys: more dotted keys may extend it, no header may define it.
    Dotted,
    /// An array of tables, made by `[[header]]`.
    Tables,
}

/// A parsed file: its root table.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub(super) root: Item,
}

static EMPTY: DocTable = BTreeMap::new();

impl Document {
    pub fn table(&self) -> &DocTable {
        match &self.root.value {
            DocValue::Table(table) => table,
            _ => &EMPTY,
        }
    }
}

/// A key as written: its parts (one unless dotted), each with its span.
type Key = Vec<(String, Range<usize>)>;

/// Parses a whole document. The first error ends it: one line and the bytes it is about.
pub fn parse(text: &str) -> Result<Document, Error> {
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        pos: if text.starts_with('\u{feff}') { 3 } else { 0 },
    };
    let mut root = DocTable::new();
    // The current table, as the keys of its header.
    let mut section: Vec<String> = Vec::new();
    loop {
        p.skip_ws();
        match p.peek() {
            None => break,
            Some(b'[') => {
                section = p.header(&mut root)?;
                p.end_of_line("a table header")?;
            }
            Some(b'#' | b'\n' | b'\r') => p.end_of_line("a comment")?,
            Some(_) => {
                let at = p.pos;
                let table = find(&mut root, &section)
                    .ok_or_else(|| Error::new("the current table is lost", at..at))?;
                p.key_value(table, section.len())?;
                p.end_of_line("a value")?;
            }
        }
    }
    Ok(Document {
        root: Item {
            value: DocValue::Table(root),
            span: 0..0,
            kind: Kind::Header,
        },
    })
}

/// The table a header path leads to (the last element of an array of tables).
fn find<'t>(mut table: &'t mut DocTable, path: &[String]) -> Option<&'t mut DocTable> {
    for name in path {
        table = match &mut table.get_mut(name)?.item.value {
            DocValue::Table(t) => t,
            DocValue::Array(items) => match &mut items.last_mut()?.value {
                DocValue::Table(t) => t,
                _ => return None,
            },
            _ => return None,
        };
    }
    Some(table)
}

/// `a.b."c d"` as a message shows it.
fn dotted(key: &[(String, Range<usize>)]) -> String {
    let parts: Vec<String> = key
        .iter()
        .map(|(name, _)| {
            let bare = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if bare {
                name.clone()
            } else {
                format!("{name:?}")
            }
        })
        .collect();
    parts.join(".")
}

fn table_item(span: Range<usize>, kind: Kind) -> Item {
    Item {
        value: DocValue::Table(DocTable::new()),
        span,
        kind,
    }
}

/// Defines the table (or appends to the array of tables) a header names.
fn define(root: &mut DocTable, key: &Key, span: Range<usize>, array: bool) -> Result<(), Error> {
    let mut table = root;
    for (i, (name, at)) in key.iter().enumerate() {
        let last = i + 1 == key.len();
        let path = || dotted(&key[..=i]);
        let entry = match table.entry(name.clone()) {
            Slot::Vacant(slot) => {
                let item = match (last, array) {
                    (true, true) => Item {
                        value: DocValue::Array(vec![table_item(span.clone(), Kind::Header)]),
                        span: span.clone(),
                        kind: Kind::Tables,
                    },
                    (true, false) => table_item(span.clone(), Kind::Header),
                    _ => table_item(span.clone(), Kind::Implicit),
                };
                slot.insert(Entry {
                    key: at.clone(),
                    item,
                })
            }
            Slot::Occupied(slot) => {
                let entry = slot.into_mut();
                let item = &mut entry.item;
                match (&mut item.value, item.kind) {
                    (DocValue::Array(items), Kind::Tables) if last && array => {
                        items.push(table_item(span.clone(), Kind::Header));
                    }
                    (DocValue::Table(_), Kind::Implicit) if last && !array => {
                        // Defined where it is defined, not where it was first named.
                        item.kind = Kind::Header;
                        item.span = span.clone();
                        entry.key = at.clone();
                    }
                    (DocValue::Table(_), Kind::Implicit | Kind::Header | Kind::Dotted)
                    | (DocValue::Array(_), Kind::Tables)
                        if !last => {}
                    (DocValue::Table(_), Kind::Literal) if !last => {
                        return Err(Error::new(
                            format!("inline table `{}` cannot be extended", path()),
                            at.clone(),
                        ))
                    }
                    _ if last && array => {
                        return Err(Error::new(
                            format!("`{}` is not an array of tables", path()),
                            at.clone(),
                        ))
                    }
                    _ if last => {
                        return Err(Error::new(
                            format!("duplicate table `{}`", path()),
                            at.clone(),
                        ))
                    }
                    _ => {
                        return Err(Error::new(
                            format!("`{}` is not a table", path()),
                            at.clone(),
                        ))
                    }
                }
                entry
            }
        };
        table = match &mut entry.item.value {
            DocValue::Table(t) => t,
            DocValue::Array(items) => match items.last_mut().map(|item| &mut item.value) {
                Some(DocValue::Table(t)) => t,
                _ => return Err(Error::new("an array of tables without a table", span)),
            },
            _ => return Err(Error::new("a header that made no table", span)),
        };
    }
    Ok(())
}

/// Puts `key = item` into `table`, making the tables of a dotted key on the way.
fn insert(mut table: &mut DocTable, key: Key, item: Item) -> Result<(), Error> {
    for (i, (name, at)) in key.iter().enumerate() {
        let path = || dotted(&key[..=i]);
        if i + 1 == key.len() {
            return match table.entry(name.clone()) {
                Slot::Vacant(slot) => {
                    slot.insert(Entry {
                        key: at.clone(),
                        item,
                    });
                    Ok(())
                }
                Slot::Occupied(_) => Err(Error::new(
                    format!("duplicate key `{}`", path()),
                    at.clone(),
                )),
            };
        }
        let entry = table.entry(name.clone()).or_insert_with(|| Entry {
            key: at.clone(),
            item: table_item(at.clone(), Kind::Dotted),
        });
        table = match (&mut entry.item.value, &mut entry.item.kind) {
            (DocValue::Table(t), kind @ (Kind::Dotted | Kind::Implicit)) => {
                *kind = Kind::Dotted;
                t
            }
            (DocValue::Table(_), Kind::Literal) => {
                return Err(Error::new(
                    format!("inline table `{}` cannot be extended", path()),
                    at.clone(),
                ))
            }
            (DocValue::Table(_), _) | (DocValue::Array(_), Kind::Tables) => {
                return Err(Error::new(
                    format!(
                        "table `{}` is defined by a header; dotted keys cannot extend it",
                        path()
                    ),
                    at.clone(),
                ))
            }
            _ => {
                return Err(Error::new(
                    format!("`{}` is not a table", path()),
                    at.clone(),
                ))
            }
        };
    }
    Err(Error::new("expected a key", 0..0))
}

/// Control characters are not allowed in strings and comments; tab is.
fn is_control(b: u8) -> bool {
    (b < 0x20 && b != b'\t') || b == 0x7f
}

fn is_bare(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<u8> {
        self.bytes.get(self.pos + ahead).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        let found = self.peek() == Some(b);
        self.pos += usize::from(found);
        found
    }

    fn rest(&self) -> &[u8] {
        self.bytes.get(self.pos..).unwrap_or_default()
    }

    /// Text between two ASCII positions.
    fn slice(&self, from: usize, to: usize) -> &str {
        self.text.get(from..to).unwrap_or_default()
    }

    /// An error about the character at the cursor.
    fn error(&self, message: impl Into<String>) -> Error {
        let len = self
            .text
            .get(self.pos..)
            .and_then(|rest| rest.chars().next())
            .map_or(0, char::len_utf8);
        Error::new(message, self.pos..self.pos + len)
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
    }

    /// A line break, `\n` or `\r\n`.
    fn newline(&mut self) -> bool {
        match self.peek() {
            Some(b'\n') => self.pos += 1,
            Some(b'\r') if self.peek_at(1) == Some(b'\n') => self.pos += 2,
            _ => return false,
        }
        true
    }

    /// `# ...` up to (not including) the line break.
    fn comment(&mut self) -> Result<(), Error> {
        self.pos += 1;
        while let Some(b) = self.peek() {
            if b == b'\n' || (b == b'\r' && self.peek_at(1) == Some(b'\n')) {
                break;
            }
            if is_control(b) {
                return Err(self.error("control character in a comment"));
            }
            self.pos += 1;
        }
        Ok(())
    }

    /// Whitespace, line breaks and comments, as arrays allow between their values.
    fn skip_blank(&mut self) -> Result<(), Error> {
        loop {
            self.skip_ws();
            if self.peek() == Some(b'#') {
                self.comment()?;
            } else if !self.newline() {
                return Ok(());
            }
        }
    }

    /// What may follow `after` on its line: whitespace, a comment, the line break or the end.
    fn end_of_line(&mut self, after: &str) -> Result<(), Error> {
        self.skip_ws();
        if self.peek() == Some(b'#') {
            self.comment()?;
        }
        if self.peek().is_none() || self.newline() {
            Ok(())
        } else if self.peek() == Some(b'\r') {
            Err(self.error("a carriage return must be followed by a line feed"))
        } else {
            Err(self.error(format!("expected a new line after {after}")))
        }
    }

    /// `[a.b]` or `[[a.b]]`; returns the keys of the table it opens.
    fn header(&mut self, root: &mut DocTable) -> Result<Vec<String>, Error> {
        let start = self.pos;
        let array = self.peek_at(1) == Some(b'[');
        self.pos += if array { 2 } else { 1 };
        self.skip_ws();
        let key = self.key()?;
        self.skip_ws();
        let close: &[u8] = if array { b"]]" } else { b"]" };
        if !self.rest().starts_with(close) {
            return Err(self.error(if array {
                "unclosed array of tables, expected `]]`"
            } else {
                "unclosed table, expected `]`"
            }));
        }
        self.pos += close.len();
        define(root, &key, start..self.pos, array)?;
        Ok(key.into_iter().map(|(name, _)| name).collect())
    }

    /// `key = value` into `table`, which lies `depth` tables deep.
    fn key_value(&mut self, table: &mut DocTable, depth: usize) -> Result<(), Error> {
        let key = self.key()?;
        self.skip_ws();
        if !self.eat(b'=') {
            return Err(self.error("expected `=` after a key"));
        }
        self.skip_ws();
        let item = self.value(depth + key.len())?;
        insert(table, key, item)
    }

    /// A bare, quoted or dotted key.
    fn key(&mut self) -> Result<Key, Error> {
        let mut parts = Vec::new();
        loop {
            let start = self.pos;
            let name = match self.peek() {
                Some(b'"' | b'\'')
                    if self.rest().starts_with(b"\"\"\"") || self.rest().starts_with(b"'''") =>
                {
                    return Err(self.error("a key cannot be a multi-line string"));
                }
                Some(quote @ (b'"' | b'\'')) => self.string(quote)?,
                _ => {
                    while self.peek().is_some_and(is_bare) {
                        self.pos += 1;
                    }
                    if self.pos == start {
                        return Err(self.error("expected a key"));
                    }
                    self.slice(start, self.pos).to_string()
                }
            };
            parts.push((name, start..self.pos));
            if parts.len() > MAX_DEPTH {
                return Err(Error::new(
                    format!("a key of more than {MAX_DEPTH} parts"),
                    start..self.pos,
                ));
            }
            self.skip_ws();
            if !self.eat(b'.') {
                return Ok(parts);
            }
            self.skip_ws();
        }
    }

    /// A value that lies `depth` tables and arrays deep.
    fn value(&mut self, depth: usize) -> Result<Item, Error> {
        let start = self.pos;
        // A container is one level more. Scalars are checked too: a header and a dotted key of
        // `MAX_DEPTH` parts each would otherwise put a value twice as deep as the bound.
        let container = matches!(self.peek(), Some(b'[' | b'{'));
        if depth + usize::from(container) > MAX_DEPTH {
            return Err(self.error(format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        let value = match self.peek() {
            Some(quote @ (b'"' | b'\'')) => DocValue::String(self.string(quote)?),
            Some(b'[') => DocValue::Array(self.array(depth + 1)?),
            // Not one more: the keys inside count the level, as dotted keys do.
            Some(b'{') => DocValue::Table(self.inline_table(depth)?),
            _ => self.scalar()?,
        };
        Ok(Item {
            value,
            span: start..self.pos,
            kind: Kind::Literal,
        })
    }

    fn array(&mut self, depth: usize) -> Result<Vec<Item>, Error> {
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            self.skip_blank()?;
            if self.eat(b']') {
                return Ok(items);
            }
            items.push(self.value(depth)?);
            self.skip_blank()?;
            if self.eat(b']') {
                return Ok(items);
            }
            if !self.eat(b',') {
                return Err(self.error("expected `,` or `]` in an array"));
            }
        }
    }

    /// `{ a = 1, b.c = 2 }`, on one line (TOML 1.0: no line breaks, no trailing comma).
    fn inline_table(&mut self, depth: usize) -> Result<DocTable, Error> {
        self.pos += 1;
        let mut table = DocTable::new();
        self.skip_ws();
        if self.eat(b'}') {
            return Ok(table);
        }
        loop {
            self.skip_ws();
            self.key_value(&mut table, depth)?;
            self.skip_ws();
            if self.eat(b'}') {
                return Ok(table);
            }
            if !self.eat(b',') {
                return Err(self.error("expected `,` or `}` in an inline table"));
            }
        }
    }

    fn unterminated(&self, start: usize) -> Error {
        Error::new("unterminated string", start..start + 1)
    }

    /// A string opened by `quote` at the cursor: `"..."` or `"""..."""` (basic, with escapes),
    /// `'...'` or `'''...'''` (literal, no escapes).
    fn string(&mut self, quote: u8) -> Result<String, Error> {
        let basic = quote == b'"';
        let start = self.pos;
        let multi = self.rest().starts_with(&[quote; 3]);
        if multi {
            self.pos += 3;
            self.newline();
        } else {
            self.pos += 1;
        }
        let mut out = String::new();
        loop {
            let run = self.pos;
            while let Some(b) = self.peek() {
                if b == quote
                    || (basic && b == b'\\')
                    || b == b'\r'
                    || (is_control(b) && !(multi && b == b'\n'))
                {
                    break;
                }
                self.pos += 1;
            }
            out.push_str(self.slice(run, self.pos));
            match self.peek() {
                Some(b) if b == quote && multi => {
                    if self.closing_quotes(quote, &mut out)? {
                        return Ok(out);
                    }
                }
                Some(b) if b == quote => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') if basic && multi && self.line_ending_backslash() => {}
                Some(b'\\') if basic => self.escape(&mut out)?,
                Some(b'\r') if multi && self.newline() => out.push('\n'),
                Some(b'\n' | b'\r') | None => return Err(self.unterminated(start)),
                Some(_) => return Err(self.error("control character in a string")),
            }
        }
    }

    /// A run of quotes inside a multi-line string: fewer than three are text; three to five
    /// close it, the first one or two being text. True when the string ended.
    fn closing_quotes(&mut self, quote: u8, out: &mut String) -> Result<bool, Error> {
        let n = self.rest().iter().take_while(|&&b| b == quote).count();
        if n > 5 {
            return Err(self.error("too many quotes at the end of a multi-line string"));
        }
        let text = n.checked_sub(3).unwrap_or(n);
        out.extend(std::iter::repeat_n(char::from(quote), text));
        self.pos += n;
        Ok(n >= 3)
    }

    /// A `\` ending a line of a multi-line basic string: it and the whitespace and line breaks
    /// after it vanish. False, touching nothing, when the backslash starts an escape.
    fn line_ending_backslash(&mut self) -> bool {
        let mut p = self.pos + 1;
        while matches!(self.bytes.get(p), Some(b' ' | b'\t')) {
            p += 1;
        }
        let breaks = match self.bytes.get(p) {
            Some(b'\n') => true,
            Some(b'\r') => self.bytes.get(p + 1) == Some(&b'\n'),
            _ => false,
        };
        if breaks {
            self.pos = p;
            while self.newline() || matches!(self.peek(), Some(b' ' | b'\t')) {
                if matches!(self.peek(), Some(b' ' | b'\t')) {
                    self.pos += 1;
                }
            }
        }
        breaks
    }

    /// One escape sequence of a basic string; the cursor is on its backslash.
    fn escape(&mut self, out: &mut String) -> Result<(), Error> {
        let start = self.pos;
        let ch = match self.peek_at(1) {
            Some(b'b') => '\u{8}',
            Some(b't') => '\t',
            Some(b'n') => '\n',
            Some(b'f') => '\u{c}',
            Some(b'r') => '\r',
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b @ (b'u' | b'U')) => {
                let n = if b == b'u' { 4 } else { 8 };
                let digits = self
                    .text
                    .get(start + 2..start + 2 + n)
                    .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()));
                let ch = digits
                    .and_then(|d| u32::from_str_radix(d, 16).ok())
                    .and_then(char::from_u32);
                let Some(ch) = ch else {
                    // The escape's bytes, widened to the end of a character they cut into, so
                    // the span can be sliced; shown escaped, as the file may hold controls.
                    let mut end = (start + 2 + n).min(self.text.len());
                    while !self.text.is_char_boundary(end) {
                        end += 1;
                    }
                    let shown: String = self
                        .text
                        .get(start..end)
                        .unwrap_or("\\u")
                        .chars()
                        .map(|c| match c {
                            c if c.is_control() => c.escape_unicode().to_string(),
                            c => c.to_string(),
                        })
                        .collect();
                    return Err(Error::new(
                        format!("invalid unicode escape `{shown}`"),
                        start..end,
                    ));
                };
                self.pos += n;
                ch
            }
            None => return Err(self.unterminated(start)),
            Some(_) => {
                let next = self
                    .text
                    .get(start + 1..)
                    .and_then(|rest| rest.chars().next())
                    .unwrap_or(' ');
                return Err(Error::new(
                    format!("invalid escape `\\{}`", next.escape_debug()),
                    start..start + 1 + next.len_utf8(),
                ));
            }
        };
        self.pos += 2;
        out.push(ch);
        Ok(())
    }

    /// A bare token: a boolean, number or date-time.
    fn scalar(&mut self) -> Result<DocValue, Error> {
        let start = self.pos;
        let token_end = |p: &Self, mut at: usize| {
            while p
                .bytes
                .get(at)
                .is_some_and(|&b| is_bare(b) || matches!(b, b'+' | b'.' | b':'))
            {
                at += 1;
            }
            at
        };
        self.pos = token_end(self, start);
        // `1979-05-27 07:32:00`: a date, a space and a time are one value.
        if date(self.slice(start, self.pos).as_bytes()).is_some_and(<[u8]>::is_empty)
            && self.peek() == Some(b' ')
            && self.peek_at(1).is_some_and(|b| b.is_ascii_digit())
        {
            self.pos = token_end(self, self.pos + 1);
        }
        let token = self.slice(start, self.pos);
        let span = start..self.pos;
        if token.is_empty() {
            return Err(self.error("expected a value"));
        }
        let value = match token {
            "true" => DocValue::Boolean(true),
            "false" => DocValue::Boolean(false),
            _ if is_datetime(token.as_bytes()) => DocValue::Datetime(token.to_string()),
            _ => number(token).map_err(|problem| Error::new(problem, span))?,
        };
        Ok(value)
    }
}

/// An integer or float, or why it is neither.
fn number(token: &str) -> Result<DocValue, String> {
    let invalid = || {
        let looks_numeric = token
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_digit() || b == b'+' || b == b'-');
        if token.contains([':', '-']) && token.bytes().next().is_some_and(|b| b.is_ascii_digit()) {
            format!("invalid date or time `{token}`")
        } else if looks_numeric {
            format!("invalid number `{token}`")
        } else {
            format!("invalid value `{token}` (a string needs quotes)")
        }
    };
    let (negative, body) = match token.strip_prefix('-') {
        Some(body) => (true, body),
        None => (false, token.strip_prefix('+').unwrap_or(token)),
    };
    let special = match body {
        "inf" => Some(f64::INFINITY),
        "nan" => Some(f64::NAN),
        _ => None,
    };
    if let Some(f) = special {
        return Ok(DocValue::Float(if negative { -f } else { f }));
    }
    let out_of_range = || format!("integer `{token}` does not fit in 64 bits");
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        if let Some(digits) = token.strip_prefix(prefix) {
            if !valid_digits(digits, radix) {
                return Err(invalid());
            }
            return i64::from_str_radix(&digits.replace('_', ""), radix)
                .map(DocValue::Integer)
                .map_err(|_| out_of_range());
        }
    }
    let (mantissa, exponent) = match body.split_once(['e', 'E']) {
        Some((m, e)) => (m, Some(e)),
        None => (body, None),
    };
    let (int, fraction) = match mantissa.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (mantissa, None),
    };
    let valid = valid_digits(int, 10)
        && (int == "0" || !int.starts_with('0'))
        && fraction.is_none_or(|f| valid_digits(f, 10))
        && exponent.is_none_or(|e| valid_digits(e.strip_prefix(['+', '-']).unwrap_or(e), 10));
    if !valid {
        return Err(invalid());
    }
    let clean = token.replace('_', "");
    if fraction.is_none() && exponent.is_none() {
        clean
            .parse::<i64>()
            .map(DocValue::Integer)
            .map_err(|_| out_of_range())
    } else {
        clean
            .parse::<f64>()
            .map(DocValue::Float)
            .map_err(|_| invalid())
    }
}

/// Digits of `radix`, an underscore only between two of them.
fn valid_digits(digits: &str, radix: u32) -> bool {
    let digit = |b: u8| char::from(b).is_digit(radix);
    let b = digits.as_bytes();
    b.first().is_some_and(|&f| digit(f))
        && b.last().is_some_and(|&l| digit(l))
        && b.windows(2).all(|w| w != b"__")
        && b.iter().all(|&c| digit(c) || c == b'_')
}

/// Two or four ASCII digits as a number.
fn digits(d: &[u8]) -> Option<u32> {
    d.iter().try_fold(0, |n, &b| {
        b.is_ascii_digit().then(|| n * 10 + u32::from(b - b'0'))
    })
}

/// `YYYY-MM-DD` with a real day; returns what follows it.
fn date(b: &[u8]) -> Option<&[u8]> {
    let [y1, y2, y3, y4, b'-', m1, m2, b'-', d1, d2, rest @ ..] = b else {
        return None;
    };
    let year = digits(&[*y1, *y2, *y3, *y4])?;
    let month = digits(&[*m1, *m2])?;
    let day = digits(&[*d1, *d2])?;
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        1..=12 => 31,
        _ => 0,
    };
    (1..=days).contains(&day).then_some(rest)
}

/// `HH:MM:SS` with an optional fraction; returns what follows it. A leap second (60) is
/// allowed, as RFC 3339 allows it.
fn time(b: &[u8]) -> Option<&[u8]> {
    let [h1, h2, b':', m1, m2, b':', s1, s2, rest @ ..] = b else {
        return None;
    };
    let ok = digits(&[*h1, *h2])? <= 23 && digits(&[*m1, *m2])? <= 59 && digits(&[*s1, *s2])? <= 60;
    match rest {
        [b'.', fraction @ ..] => {
            let n = fraction.iter().take_while(|b| b.is_ascii_digit()).count();
            (ok && n > 0).then(|| fraction.get(n..).unwrap_or_default())
        }
        _ => ok.then_some(rest),
    }
}

/// An offset date-time, local date-time, local date or local time.
fn is_datetime(b: &[u8]) -> bool {
    let Some(rest) = date(b) else {
        return time(b).is_some_and(<[u8]>::is_empty);
    };
    let [sep, rest @ ..] = rest else {
        return true;
    };
    if !matches!(sep, b'T' | b't' | b' ') {
        return false;
    }
    match time(rest) {
        Some([] | [b'Z' | b'z']) => true,
        Some([b'+' | b'-', h1, h2, b':', m1, m2]) => {
            digits(&[*h1, *h2]).is_some_and(|h| h <= 23)
                && digits(&[*m1, *m2]).is_some_and(|m| m <= 59)
        }
        _ => false,
    }
}
