//! MCP results as the text a model reads: tool results (`tools/call`), prompt messages
//! (`prompts/get`) and resource contents (`resources/read`).
//!
//! Text is passed through; images and audio are described by type and size (a text-only model
//! cannot use the bytes, and base64 would only burn context); embedded text resources are
//! inlined; `structuredContent` is shown when the server gave no text.

use serde_json::Value;

/// A tool result as text, and whether the server flagged it as an error (`isError`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub text: String,
    pub is_error: bool,
}

/// Shown when a result holds nothing at all.
const EMPTY: &str = "(no output)";

pub fn tool_result(result: &Value) -> ToolOutput {
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut parts: Vec<String> = blocks.iter().map(block_text).collect();
    let has_text = blocks
        .iter()
        .any(|b| b.get("type").and_then(Value::as_str) == Some("text"));
    if !has_text {
        if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
            parts.push(structured.to_string());
        }
    }
    parts.retain(|p| !p.is_empty());
    let text = if parts.is_empty() {
        EMPTY.to_string()
    } else {
        parts.join("\n")
    };
    ToolOutput {
        text,
        is_error: result.get("isError").and_then(Value::as_bool) == Some(true),
    }
}

fn str_field<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

/// One content block as text.
pub fn block_text(block: &Value) -> String {
    let kind = str_field(block, "type");
    match kind {
        "text" => str_field(block, "text").to_string(),
        "image" | "audio" => format!(
            "[{kind}: {}, {}]",
            mime_or_unknown(block),
            size_text(decoded_len(str_field(block, "data")))
        ),
        "resource" => block
            .get("resource")
            .map(embedded_resource)
            .unwrap_or_default(),
        "resource_link" => {
            let name = str_field(block, "name");
            let uri = str_field(block, "uri");
            if name.is_empty() || name == uri {
                format!("[resource link: {uri}]")
            } else {
                format!("[resource link: {uri} ({name})]")
            }
        }
        other => format!("[{other} content not shown]"),
    }
}

fn mime_or_unknown(value: &Value) -> &str {
    match str_field(value, "mimeType") {
        "" => "unknown type",
        mime => mime,
    }
}

/// An embedded resource (text inlined, binary described), as in a tool result.
fn embedded_resource(resource: &Value) -> String {
    let uri = str_field(resource, "uri");
    match resource.get("text").and_then(Value::as_str) {
        Some(text) => format!("<resource uri=\"{uri}\">\n{text}\n</resource>"),
        None => format!(
            "[resource {uri}: {}, {}]",
            mime_or_unknown(resource),
            size_text(decoded_len(str_field(resource, "blob")))
        ),
    }
}

/// The number of bytes a base64 string decodes to.
pub fn decoded_len(base64: &str) -> usize {
    let symbols = base64
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'=')
        .count();
    symbols * 3 / 4
}

fn size_text(bytes: usize) -> String {
    match bytes {
        1 => "1 byte".to_string(),
        n => format!("{n} bytes"),
    }
}

/// `prompts/get` messages as the text of one user turn. A single user message is its text;
/// a conversation is kept as tagged turns so the roles survive.
pub fn prompt_text(result: &Value) -> String {
    let messages = result
        .get("messages")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let all_user = messages.iter().all(|m| str_field(m, "role") == "user");
    let texts = messages.iter().map(|m| {
        let content = m.get("content").unwrap_or(&Value::Null);
        let text = match content {
            Value::Array(blocks) => blocks.iter().map(block_text).collect::<Vec<_>>().join("\n"),
            block => block_text(block),
        };
        (str_field(m, "role"), text)
    });
    if all_user {
        texts.map(|(_, t)| t).collect::<Vec<_>>().join("\n\n")
    } else {
        texts
            .map(|(role, t)| format!("<message role=\"{role}\">\n{t}\n</message>"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// `resources/read` contents as text: text parts joined, binary parts described.
pub fn resource_text(result: &Value) -> String {
    let contents = result
        .get("contents")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let parts: Vec<String> = contents
        .iter()
        .map(|c| match c.get("text").and_then(Value::as_str) {
            Some(text) => text.to_string(),
            None => format!(
                "[{}: {}]",
                mime_or_unknown(c),
                size_text(decoded_len(str_field(c, "blob")))
            ),
        })
        .collect();
    if parts.is_empty() {
        EMPTY.to_string()
    } else {
        parts.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mixed_content_becomes_text_with_media_described() {
        let result = json!({"content": [
            {"type": "text", "text": "first"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "doc://a", "text": "inline body", "mimeType": "text/plain"}},
            {"type": "resource", "resource": {"uri": "bin://b", "blob": "AAAAAA==", "mimeType": "application/gzip"}},
            {"type": "resource_link", "uri": "file:///x", "name": "x file"},
            {"type": "hologram"}
        ]});
        let out = tool_result(&result);
        assert!(!out.is_error);
        assert_eq!(
            out.text,
            "first\n[image: image/png, 8 bytes]\n[audio: audio/wav, 3 bytes]\n<resource uri=\"doc://a\">\ninline body\n</resource>\n[resource bin://b: application/gzip, 4 bytes]\n[resource link: file:///x (x file)]\n[hologram content not shown]"
        );
    }

    #[test]
    fn structured_content_shows_only_without_text() {
        let with_text =
            json!({"content": [{"type": "text", "text": "22"}], "structuredContent": {"t": 22}});
        assert_eq!(tool_result(&with_text).text, "22");
        let without = json!({"content": [], "structuredContent": {"t": 22}});
        assert_eq!(tool_result(&without).text, "{\"t\":22}");
        assert_eq!(tool_result(&json!({})).text, "(no output)");
    }

    #[test]
    fn is_error_is_reported() {
        let out = tool_result(
            &json!({"isError": true, "content": [{"type": "text", "text": "bad input"}]}),
        );
        assert_eq!(
            out,
            ToolOutput {
                text: "bad input".into(),
                is_error: true
            }
        );
    }

    #[test]
    fn prompts_keep_roles_only_when_there_is_more_than_the_user() {
        let user = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Weather in Paris?"}}]});
        assert_eq!(prompt_text(&user), "Weather in Paris?");
        let convo = json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "q"}},
            {"role": "assistant", "content": {"type": "text", "text": "a"}}
        ]});
        assert_eq!(
            prompt_text(&convo),
            "<message role=\"user\">\nq\n</message>\n<message role=\"assistant\">\na\n</message>"
        );
    }

    #[test]
    fn resource_contents_join_text_and_describe_blobs() {
        let result = json!({"contents": [
            {"uri": "a", "text": "hello"},
            {"uri": "b", "blob": "AAAA", "mimeType": "image/gif"}
        ]});
        assert_eq!(resource_text(&result), "hello\n[image/gif: 3 bytes]");
    }
}
