//! A remote MCP tool as a [`Tool`]: named `mcp__<server>__<tool>` with every character a
//! provider would reject replaced by `_` (and a hash suffix when the name gets too long or
//! collides), its input schema made a proper object schema (the registry canonicalises it), and
//! `annotations.readOnlyHint: true` as the only way to be read-only: a remote tool is opaque.
//!
//! Executing one calls the server through the shared [`Server`]; `isError` results and
//! transport failures become tool errors the model can read.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::server::Server;
use super::McpError;
use crate::hash::sha256_hex;
use crate::permission::McpToolPolicy;
use crate::tool::{Family, Tool, ToolContext, ToolError};

/// OpenAI-compatible APIs accept function names of at most 64 characters.
pub const MAX_NAME: usize = 64;

/// A tool as the server lists it (the parts we use).
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub read_only: bool,
    /// Only an explicit `destructiveHint: true` counts; the MCP default (true for any
    /// non-read-only tool) would make every unannotated tool unusable headless.
    pub destructive: bool,
    /// `execution.taskSupport: "required"`: callable only through the tasks API, which we do
    /// not speak.
    pub task_only: bool,
}

impl RemoteTool {
    /// `None` for an entry without a usable name.
    pub fn parse(value: &Value) -> Option<RemoteTool> {
        let name = value.get("name")?.as_str()?.trim();
        if name.is_empty() {
            return None;
        }
        let text = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or("").trim();
        let description = match (text("description"), text("title")) {
            ("", "") => format!("The `{name}` tool of an MCP server."),
            ("", title) => title.to_string(),
            (description, _) => description.to_string(),
        };
        let hint = |key: &str| {
            value
                .get("annotations")
                .and_then(|a| a.get(key))
                .and_then(Value::as_bool)
                == Some(true)
        };
        let read_only = hint("readOnlyHint");
        Some(RemoteTool {
            name: name.to_string(),
            description,
            input_schema: object_schema(value.get("inputSchema")),
            read_only,
            destructive: !read_only && hint("destructiveHint"),
            task_only: value
                .get("execution")
                .and_then(|e| e.get("taskSupport"))
                .and_then(Value::as_str)
                == Some("required"),
        })
    }
}

/// An object schema providers accept: `type: object` and `properties` present, `$schema`
/// dropped (some OpenAI-compatible servers reject it).
fn object_schema(schema: Option<&Value>) -> Value {
    let mut map = match schema {
        Some(Value::Object(map)) => map.clone(),
        _ => Map::new(),
    };
    map.remove("$schema");
    map.insert("type".into(), json!("object"));
    map.entry("properties").or_insert_with(|| json!({}));
    Value::Object(map)
}

/// Characters outside `[A-Za-z0-9_-]` become `_` (spaces included).
pub fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `mcp__<server>__<tool>`, shortened with a hash of the full name when too long.
pub fn tool_name(server: &str, tool: &str) -> String {
    let name = format!("mcp__{}__{}", sanitize(server), sanitize(tool));
    if name.len() <= MAX_NAME {
        return name;
    }
    with_suffix(&name, &format!("{server}\0{tool}"))
}

/// `name` cut to fit a `_<8 hex>` suffix derived from `seed`.
pub fn with_suffix(name: &str, seed: &str) -> String {
    let hash = sha256_hex(seed.as_bytes());
    let keep = MAX_NAME - 9;
    let cut: String = name.chars().take(keep).collect();
    format!("{cut}_{}", &hash[..8])
}

/// One remote tool in the registry.
pub struct McpTool {
    name: String,
    remote: RemoteTool,
    server: Arc<Server>,
}

impl McpTool {
    pub fn new(name: String, remote: RemoteTool, server: Arc<Server>) -> McpTool {
        McpTool {
            name,
            remote,
            server,
        }
    }

    /// The name the server knows the tool by.
    pub fn remote_name(&self) -> &str {
        &self.remote.name
    }

    pub fn server_name(&self) -> &str {
        self.server.name()
    }

    /// What the permission gate and plan mode need: the hints, the approval mode and
    /// whether the user trusts the tool as read-only.
    pub fn policy(&self) -> McpToolPolicy {
        McpToolPolicy {
            destructive: self.remote.destructive,
            read_only: self.remote.read_only,
            trusted_read_only: self
                .server
                .spec()
                .trusted_read_only
                .contains(&self.remote.name),
            mode: self.server.spec().tool_mode(&self.remote.name),
            auto_review: self.server.spec().auto_review,
        }
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.remote.description
    }

    fn schema(&self) -> Value {
        self.remote.input_schema.clone()
    }

    fn read_only(&self) -> bool {
        self.remote.read_only
    }
    fn family(&self) -> Family {
        Family::Other
    }

    fn execute(&self, args: &Value, ctx: &ToolContext) -> Result<String, ToolError> {
        match self.server.call_tool(&self.remote.name, args, &ctx.cancel) {
            Ok(output) if output.is_error => Err(ToolError::Failed(output.text)),
            Ok(output) => Ok(output.text),
            Err(McpError::Cancelled) => Err(ToolError::Cancelled),
            Err(McpError::Rpc(e)) if e.code == super::jsonrpc::INVALID_PARAMS => {
                Err(ToolError::InvalidArgs(e.message))
            }
            Err(err) => Err(ToolError::Failed(format!(
                "MCP server `{}`: {}",
                self.server.name(),
                err.to_string().trim_start_matches("mcp: ")
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_namespaced_and_sanitised() {
        assert_eq!(
            tool_name("my server", "get data"),
            "mcp__my_server__get_data"
        );
        assert_eq!(tool_name("a.b", "x/y:z"), "mcp__a_b__x_y_z");
        let long = tool_name("server", &"t".repeat(100));
        assert_eq!(long.len(), MAX_NAME);
        assert!(long.starts_with("mcp__server__ttt"));
        assert_ne!(long, tool_name("server", &"t".repeat(101)));
    }

    #[test]
    fn annotations_decide_read_only_and_destructive() {
        let parse = |v: Value| RemoteTool::parse(&v).unwrap();
        let reader = parse(
            json!({"name": "r", "annotations": {"readOnlyHint": true, "destructiveHint": true}}),
        );
        assert!(reader.read_only && !reader.destructive);
        let plain = parse(json!({"name": "w"}));
        assert!(!plain.read_only && !plain.destructive);
        let rm = parse(json!({"name": "rm", "annotations": {"destructiveHint": true}}));
        assert!(rm.destructive);
        let task = parse(json!({"name": "t", "execution": {"taskSupport": "required"}}));
        assert!(task.task_only);
        assert!(RemoteTool::parse(&json!({"name": " "})).is_none());
        assert!(RemoteTool::parse(&json!({"title": "x"})).is_none());
    }

    #[test]
    fn schemas_become_object_schemas() {
        let tool = RemoteTool::parse(&json!({"name": "e", "inputSchema": {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object", "properties": {"m": {"type": "string"}}, "required": ["m"]
        }}))
        .unwrap();
        assert_eq!(
            tool.input_schema,
            json!({"type": "object", "properties": {"m": {"type": "string"}}, "required": ["m"]})
        );
        let bare = RemoteTool::parse(&json!({"name": "e"})).unwrap();
        assert_eq!(
            bare.input_schema,
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(bare.description, "The `e` tool of an MCP server.");
    }
}
