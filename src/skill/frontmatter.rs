//! The `---` block at the top of a `SKILL.md`: a small hand-written reader for the subset of
//! YAML that skill files use (`key: value` lines, quoted strings, `>`/`|` block scalars, inline
//! `[a, b]` and `- item` lists, `#` comments). Anything outside that subset is an error that
//! names the file's line, so a typo never silently changes what a skill does.

use std::collections::BTreeMap;

/// One value of the frontmatter, with the line it started on (1-based, in the file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub value: Value,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Text(String),
    List(Vec<String>),
}

/// A parse failure at a line of the file (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub line: usize,
    pub message: String,
}

impl Error {
    fn at(line: usize, message: impl Into<String>) -> Error {
        Error {
            line,
            message: message.into(),
        }
    }
}

/// The frontmatter's keys and the body after the closing fence, with the body's first line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    pub keys: BTreeMap<String, Entry>,
    pub body: String,
    pub body_line: usize,
}

/// Splits a `SKILL.md` into its frontmatter keys and its Markdown body.
pub fn parse(text: &str) -> Result<Document, Error> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    if lines.first().map(|l| l.trim_end()) != Some("---") {
        return Err(Error::at(
            1,
            "a SKILL.md must start with a `---` line opening the frontmatter (name, description)",
        ));
    }
    let close = lines
        .iter()
        .skip(1)
        .position(|l| l.trim_end() == "---")
        .map(|i| i + 1)
        .ok_or_else(|| {
            Error::at(
                lines.len(),
                "the frontmatter opened on line 1 is never closed with a `---` line",
            )
        })?;
    let keys = parse_keys(&lines[1..close], 2)?;
    let body = lines[close + 1..].join("\n");
    Ok(Document {
        keys,
        body,
        body_line: close + 2,
    })
}

fn parse_keys(lines: &[&str], first_line: usize) -> Result<BTreeMap<String, Entry>, Error> {
    let mut keys: BTreeMap<String, Entry> = BTreeMap::new();
    let mut i = 0;
    while i < lines.len() {
        let line_no = first_line + i;
        let line = lines[i];
        i += 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            return Err(Error::at(
                line_no,
                format!(
                    "unexpected indented line `{}`; only top-level `key: value` lines are read",
                    trimmed
                ),
            ));
        }
        let Some((key, rest)) = line.split_once(':') else {
            return Err(Error::at(
                line_no,
                format!("expected `key: value`, got `{trimmed}`"),
            ));
        };
        let key = key.trim();
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(Error::at(
                line_no,
                format!("`{key}` is not a valid key name"),
            ));
        }
        if let Some(previous) = keys.get(key) {
            return Err(Error::at(
                line_no,
                format!("`{key}` is set twice (first on line {})", previous.line),
            ));
        }
        let rest = rest.trim();
        // The lines that belong to this key: indented ones (block scalars and `- item` lists).
        let start = i;
        while i < lines.len() && (lines[i].starts_with([' ', '\t']) || lines[i].trim().is_empty()) {
            i += 1;
        }
        let nested = &lines[start..i];
        let value = if rest.starts_with('|') || rest.starts_with('>') {
            block_scalar(rest, nested, line_no)?
        } else if rest.is_empty() || rest.starts_with('#') {
            block_list(nested, line_no + 1)?
        } else {
            if let Some(extra) = nested.iter().position(|l| !l.trim().is_empty()) {
                return Err(Error::at(
                    line_no + 1 + extra,
                    format!("unexpected indented line under `{key}`, which already has a value"),
                ));
            }
            inline(rest, line_no)?
        };
        keys.insert(
            key.to_string(),
            Entry {
                value,
                line: line_no,
            },
        );
    }
    Ok(keys)
}

/// `|` keeps line breaks, `>` folds them into spaces; trailing blank lines are dropped.
fn block_scalar(indicator: &str, nested: &[&str], line_no: usize) -> Result<Value, Error> {
    let style = &indicator[..1];
    let chomp = indicator[1..].trim();
    if !chomp.is_empty() && !chomp.starts_with('#') && chomp != "-" && chomp != "+" {
        return Err(Error::at(
            line_no,
            format!("unsupported block indicator `{indicator}`; use `|` or `>`"),
        ));
    }
    let indent = nested
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let body: Vec<&str> = nested
        .iter()
        .map(|l| if l.len() >= indent { &l[indent..] } else { "" })
        .collect();
    let text = if style == "|" {
        body.join("\n")
    } else {
        let mut folded = String::new();
        for line in &body {
            if line.trim().is_empty() {
                folded.push('\n');
            } else {
                if !folded.is_empty() && !folded.ends_with('\n') {
                    folded.push(' ');
                }
                folded.push_str(line.trim());
            }
        }
        folded
    };
    Ok(Value::Text(text.trim_end().to_string()))
}

fn block_list(nested: &[&str], first_line: usize) -> Result<Value, Error> {
    let mut items = Vec::new();
    for (offset, line) in nested.iter().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let Some(item) = trimmed
            .strip_prefix("- ")
            .or_else(|| (trimmed == "-").then_some(""))
        else {
            return Err(Error::at(
                first_line + offset,
                format!("expected a `- item` list entry, got `{trimmed}`"),
            ));
        };
        match inline(item.trim(), first_line + offset)? {
            Value::Text(text) => items.push(text),
            Value::List(_) => {
                return Err(Error::at(
                    first_line + offset,
                    "nested lists are not supported",
                ))
            }
        }
    }
    if items.is_empty() {
        return Ok(Value::Text(String::new()));
    }
    Ok(Value::List(items))
}

/// A value on the key's own line: a quoted string, an inline `[a, b]` list or a plain scalar
/// (where ` #` starts a comment).
fn inline(text: &str, line_no: usize) -> Result<Value, Error> {
    if text.starts_with('"') || text.starts_with('\'') {
        let (value, rest) = quoted(text, line_no)?;
        let rest = rest.trim();
        if !rest.is_empty() && !rest.starts_with('#') {
            return Err(Error::at(
                line_no,
                format!("unexpected `{rest}` after the closing quote"),
            ));
        }
        return Ok(Value::Text(value));
    }
    if let Some(inner) = text.strip_prefix('[') {
        let Some(end) = inner.rfind(']') else {
            return Err(Error::at(line_no, "the `[` list is never closed with `]`"));
        };
        let rest = inner[end + 1..].trim();
        if !rest.is_empty() && !rest.starts_with('#') {
            return Err(Error::at(
                line_no,
                format!("unexpected `{rest}` after the list"),
            ));
        }
        let mut items = Vec::new();
        for part in split_list(&inner[..end], line_no)? {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            match inline(part, line_no)? {
                Value::Text(item) => items.push(item),
                Value::List(_) => return Err(Error::at(line_no, "nested lists are not supported")),
            }
        }
        return Ok(Value::List(items));
    }
    let plain = match text.find(" #") {
        Some(at) => &text[..at],
        None => text,
    };
    Ok(Value::Text(plain.trim().to_string()))
}

/// Splits `a, "b, c", d` at the commas outside quotes.
fn split_list(text: &str, line_no: usize) -> Result<Vec<String>, Error> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match quote {
            Some(q) if c == q => {
                quote = None;
                current.push(c);
            }
            Some(_) => current.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                current.push(c);
            }
            None if c == ',' => parts.push(std::mem::take(&mut current)),
            None => current.push(c),
        }
    }
    if quote.is_some() {
        return Err(Error::at(line_no, "a quoted list item is never closed"));
    }
    parts.push(current);
    Ok(parts)
}

/// A `"…"` (with `\` escapes) or `'…'` (with `''` for a quote) string; returns it and the rest.
fn quoted(text: &str, line_no: usize) -> Result<(String, &str), Error> {
    let quote = text.chars().next().unwrap_or('"');
    let mut out = String::new();
    let mut chars = text.char_indices().skip(1);
    while let Some((at, c)) = chars.next() {
        if c == quote {
            if quote == '\'' && text[at + 1..].starts_with('\'') {
                out.push('\'');
                chars.next();
                continue;
            }
            return Ok((out, &text[at + 1..]));
        }
        if c == '\\' && quote == '"' {
            let escaped = chars.next().map(|(_, e)| e);
            match escaped {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('"') => out.push('"'),
                Some('\\') => out.push('\\'),
                Some(other) => {
                    return Err(Error::at(
                        line_no,
                        format!("unsupported escape `\\{other}` in a quoted string"),
                    ))
                }
                None => break,
            }
            continue;
        }
        out.push(c);
    }
    Err(Error::at(
        line_no,
        format!("the string opened with {quote} is never closed"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(doc: &Document, key: &str) -> String {
        match &doc.keys[key].value {
            Value::Text(t) => t.clone(),
            Value::List(l) => panic!("{key} is a list: {l:?}"),
        }
    }

    #[test]
    fn reads_the_subset_skill_files_use() {
        let doc = parse(
            "---\nname: review\ndescription: \"Review: the diff\" # why\nrunAs: subagent\n\
             allowed-tools: [read_file, 'grep', \"a, b\"]\nlong: >\n  folded\n  text\n\
             keep: |\n  line one\n  line two\nitems:\n  - one\n  - \"two\"\n---\n# Body\nText\n",
        )
        .unwrap();
        assert_eq!(text(&doc, "name"), "review");
        assert_eq!(text(&doc, "description"), "Review: the diff");
        assert_eq!(text(&doc, "long"), "folded text");
        assert_eq!(text(&doc, "keep"), "line one\nline two");
        assert_eq!(
            doc.keys["allowed-tools"].value,
            Value::List(vec!["read_file".into(), "grep".into(), "a, b".into()])
        );
        assert_eq!(
            doc.keys["items"].value,
            Value::List(vec!["one".into(), "two".into()])
        );
        assert_eq!(doc.keys["runAs"].line, 4);
        assert_eq!(doc.body, "# Body\nText\n");
        assert_eq!(doc.body_line, 16);
    }

    #[test]
    fn crlf_and_a_byte_order_mark_are_accepted() {
        let doc = parse("\u{feff}---\r\nname: x\r\ndescription: y\r\n---\r\nbody\r\n").unwrap();
        assert_eq!(text(&doc, "name"), "x");
        assert_eq!(doc.body, "body\n");
    }

    #[test]
    fn errors_name_the_line() {
        let cases: &[(&str, usize, &str)] = &[
            ("name: x\n", 1, "must start with"),
            ("---\nname: x\n", 3, "never closed"),
            (
                "---\nname: x\njust words\n---\n",
                3,
                "expected `key: value`",
            ),
            (
                "---\nname: x\nname: y\n---\n",
                3,
                "set twice (first on line 2)",
            ),
            ("---\nname: \"x\n---\n", 2, "never closed"),
            (
                "---\nname: x\n  stray: 1\n---\n",
                3,
                "unexpected indented line under `name`",
            ),
            ("---\ntools: [a, b\n---\n", 2, "never closed with `]`"),
            ("---\nlist:\n  - a\n  b\n---\n", 4, "`- item`"),
            ("---\nbad key: 1\n---\n", 2, "not a valid key name"),
            ("---\nx: \"a\\q\"\n---\n", 2, "unsupported escape"),
        ];
        for (input, line, fragment) in cases {
            let err = parse(input).unwrap_err();
            assert_eq!(err.line, *line, "{input:?}: {err:?}");
            assert!(err.message.contains(fragment), "{input:?}: {err:?}");
        }
    }
}
