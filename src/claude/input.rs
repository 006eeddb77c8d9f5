//! `--input-format stream-json` without the Agent SDK's control protocol: the user messages
//! on stdin (`{"type": "user", "message": {"role": "user", "content": ...}}`, one per line),
//! read to the end and given to the session as its prompt. The control requests of the SDK
//! are `control*`'s; a line of another type is refused here so it is never dropped unseen.

use std::fmt;
use std::io::BufRead;

use serde_json::Value;

/// The most one line of stdin may hold, and all of them together.
const MAX_LINE: usize = 4 << 20;
const MAX_TOTAL: usize = 16 << 20;

#[derive(Debug)]
pub enum InputError {
    Io(std::io::Error),
    /// Line `line` (1-based) is not a user message we can read; `detail` says why.
    Line {
        line: usize,
        detail: String,
    },
    TooLong,
    Empty,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::Io(e) => write!(f, "input: reading stdin: {e}"),
            InputError::Line { line, detail } => write!(f, "input: stdin line {line}: {detail}"),
            InputError::TooLong => write!(
                f,
                "input: stdin holds more than {} MiB of messages (at most {} MiB per line)",
                MAX_TOTAL >> 20,
                MAX_LINE >> 20
            ),
            InputError::Empty => write!(
                f,
                "input: no user message on stdin; send {{\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"...\"}}}} lines"
            ),
        }
    }
}

impl std::error::Error for InputError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            InputError::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// The text of every user message on `input`, in order, separated by blank lines.
pub fn read_prompt(input: impl BufRead) -> Result<String, InputError> {
    let mut texts = Vec::new();
    let mut total = 0usize;
    for (index, line) in input.split(b'\n').enumerate() {
        let line = line.map_err(InputError::Io)?;
        total = total.saturating_add(line.len());
        if line.len() > MAX_LINE || total > MAX_TOTAL {
            return Err(InputError::TooLong);
        }
        let text = String::from_utf8_lossy(&line);
        if text.trim().is_empty() {
            continue;
        }
        let error = |detail: String| InputError::Line {
            line: index + 1,
            detail,
        };
        let value: Value =
            serde_json::from_str(&text).map_err(|e| error(format!("not JSON: {e}")))?;
        match value.get("type").and_then(Value::as_str) {
            Some("user") => texts.push(user_text(&value).map_err(error)?),
            Some(other) => {
                return Err(error(format!(
                    "a `{other}` message; only user messages are read here"
                )))
            }
            None => return Err(error("the message has no `type`".into())),
        }
    }
    if texts.iter().all(|t| t.trim().is_empty()) {
        return Err(InputError::Empty);
    }
    Ok(texts.join("\n\n"))
}

/// A user message's text: `content` as a string, or its `text` blocks.
fn user_text(message: &Value) -> Result<String, String> {
    let content = message
        .get("message")
        .and_then(|m| m.get("content"))
        .ok_or("a user message needs `message.content`")?;
    match content {
        Value::String(text) => Ok(text.clone()),
        Value::Array(blocks) => {
            let mut parts = Vec::new();
            for block in blocks {
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => parts.push(
                        block
                            .get("text")
                            .and_then(Value::as_str)
                            .ok_or("a text block needs `text`")?
                            .to_string(),
                    ),
                    Some(other) => {
                        return Err(format!("`{other}` content blocks are not supported"))
                    }
                    None => return Err("a content block needs a `type`".into()),
                }
            }
            Ok(parts.join("\n"))
        }
        _ => Err("`message.content` must be a string or a list of blocks".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_messages_are_read_in_order_whatever_their_content_form() {
        let input = concat!(
            r#"{"type":"user","message":{"role":"user","content":"first"}}"#,
            "\n\n",
            r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"second"}]}}"#,
            "\n"
        );
        assert_eq!(read_prompt(input.as_bytes()).unwrap(), "first\n\nsecond");
    }

    #[test]
    fn anything_else_is_refused_with_its_line() {
        let err = read_prompt(&b"{\"type\":\"control_request\"}\n"[..]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "input: stdin line 1: a `control_request` message; only user messages are read here"
        );
        assert!(read_prompt(&b"nope\n"[..])
            .unwrap_err()
            .to_string()
            .contains("line 1: not JSON"));
        assert!(matches!(read_prompt(&b""[..]), Err(InputError::Empty)));
        let long = vec![b'x'; MAX_LINE + 1];
        assert!(matches!(read_prompt(&long[..]), Err(InputError::TooLong)));
    }
}
