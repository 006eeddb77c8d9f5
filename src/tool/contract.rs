//! The tool contract: a Markdown rendering of a `Registry` (every tool's name, kind,
//! description, parameters and canonical schema). `docs/TOOL_CONTRACT.md` is this output for
//! the built-in tools, and a test fails when the two drift.

use serde_json::Value;

use super::Registry;

/// The command that regenerates the checked-in contract.
pub const REGENERATE: &str = "cargo run -q -- tools --markdown > docs/TOOL_CONTRACT.md";

/// "read-only" or "writer", as the contract and `reasonix tools` show it.
pub fn kind(read_only: bool) -> &'static str {
    if read_only {
        "read-only"
    } else {
        "writer"
    }
}

/// The first sentence of a description, for one-line listings. A sentence ends at a period
/// followed by a capital or a code span, so "e.g. this" does not end one.
pub fn summary(description: &str) -> &str {
    let line = description.lines().next().unwrap_or("");
    let bytes = line.as_bytes();
    for (i, window) in bytes.windows(3).enumerate() {
        let starts_sentence = window[2].is_ascii_uppercase() || window[2] == b'`';
        if window[0] == b'.' && window[1] == b' ' && starts_sentence {
            return &line[..=i];
        }
    }
    line
}

/// Renders the whole registry as the Markdown contract.
pub fn markdown(registry: &Registry) -> String {
    let mut out = String::from(HEADER);
    out.push_str("| Tool | Kind | Summary |\n|---|---|---|\n");
    let tools = registry.schemas();
    for schema in &tools {
        out.push_str(&format!(
            "| [`{0}`](#{0}) | {1} | {2} |\n",
            schema.name,
            kind(is_read_only(registry, &schema.name)),
            cell(summary(&schema.description))
        ));
    }
    for schema in &tools {
        out.push_str(&format!(
            "\n## {}\n\n**{}.** {}\n\n",
            schema.name,
            capitalised_kind(is_read_only(registry, &schema.name)),
            schema.description
        ));
        out.push_str(&parameter_table(&schema.parameters));
        // Pretty-printing keeps the canonical key order, so this is the wire schema laid out.
        let pretty = serde_json::to_string_pretty(&schema.parameters).unwrap_or_default();
        out.push_str(&format!("\n```json\n{pretty}\n```\n"));
    }
    out
}

const HEADER: &str = "\
# Tool contract

<!-- Generated from the built-in tool registry; do not edit by hand. Regenerate with
     `cargo run -q -- tools --markdown > docs/TOOL_CONTRACT.md`. -->

The built-in tools the model can call. Each schema is sent in canonical form (object keys
sorted, so the request prefix is byte-stable); the JSON blocks below are that schema
pretty-printed. Relative paths resolve against the workspace root. A failed call returns an
error text to the model (`invalid arguments: ...` for a malformed call, a plain explanation
for one that could not be carried out) so it can correct itself.

Read-only tools may run in parallel and are allowed by the default permission policy;
writers run one at a time, in the order the model asked.

";

fn is_read_only(registry: &Registry, name: &str) -> bool {
    registry.get(name).is_some_and(|tool| tool.read_only())
}

fn capitalised_kind(read_only: bool) -> &'static str {
    if read_only {
        "Read-only"
    } else {
        "Writer"
    }
}

fn parameter_table(schema: &Value) -> String {
    let mut rows = Vec::new();
    collect_rows(schema, "", &mut rows);
    if rows.is_empty() {
        return "No parameters.\n".into();
    }
    let mut out =
        String::from("| Parameter | Type | Required | Description |\n|---|---|---|---|\n");
    for row in rows {
        out.push_str(&row);
    }
    out
}

/// One row per property, descending into objects and arrays of objects (`edits[].old_string`).
fn collect_rows(schema: &Value, prefix: &str, rows: &mut Vec<String>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, property) in properties {
        let path = format!("{prefix}{name}");
        rows.push(format!(
            "| `{path}` | {} | {} | {} |\n",
            cell(&type_of(property)),
            if required.contains(&name.as_str()) {
                "yes"
            } else {
                "no"
            },
            cell(
                property
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("")
            )
        ));
        collect_rows(property, &format!("{path}."), rows);
        if let Some(items) = property.get("items") {
            collect_rows(items, &format!("{path}[]."), rows);
        }
    }
}

fn type_of(property: &Value) -> String {
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        let shown: Vec<String> = values
            .iter()
            .map(|v| match v.as_str() {
                Some(s) => format!("`{s}`"),
                None => format!("`{v}`"),
            })
            .collect();
        return shown.join(" or ");
    }
    match property.get("type") {
        Some(Value::String(t)) if t == "array" => match property.get("items") {
            Some(items) => format!("array of {}", type_of(items)),
            None => "array".into(),
        },
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "any".into(),
    }
}

/// Text safe inside a Markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{Family, Tool, ToolContext, ToolError};
    use serde_json::json;
    use std::sync::Arc;

    struct Probe;

    impl Tool for Probe {
        fn name(&self) -> &str {
            "probe"
        }
        fn description(&self) -> &str {
            "Checks a | thing. Then more, e.g. this."
        }
        fn schema(&self) -> Value {
            json!({
                "type": "object",
                "required": ["items"],
                "properties": {
                    "items": {"type": "array", "items": {
                        "type": "object",
                        "required": ["mode"],
                        "properties": {"mode": {"type": "string", "enum": ["a", "b"]}}
                    }},
                    "flag": {"type": "boolean", "description": "Say yes"}
                }
            })
        }
        fn read_only(&self) -> bool {
            true
        }
        fn family(&self) -> Family {
            Family::Other
        }
        fn execute(&self, _: &Value, _: &ToolContext) -> Result<String, ToolError> {
            Ok(String::new())
        }
    }

    #[test]
    fn renders_kind_rows_for_nested_parameters_and_the_schema() {
        let mut registry = Registry::new();
        registry.insert(Arc::new(Probe));
        let md = markdown(&registry);
        assert!(
            md.contains("| [`probe`](#probe) | read-only | Checks a \\| thing. |\n"),
            "{md}"
        );
        assert!(
            md.contains("## probe\n\n**Read-only.** Checks a | thing."),
            "{md}"
        );
        assert!(md.contains("| `flag` | boolean | no | Say yes |\n"), "{md}");
        assert!(
            md.contains("| `items` | array of object | yes |  |\n"),
            "{md}"
        );
        assert!(
            md.contains("| `items[].mode` | `a` or `b` | yes |  |\n"),
            "{md}"
        );
        assert!(
            md.contains("```json\n{\n  \"properties\": {\n    \"flag\""),
            "{md}"
        );
    }

    #[test]
    fn summary_stops_at_the_first_sentence() {
        assert_eq!(summary("Reads a file. Then more."), "Reads a file.");
        assert_eq!(summary("Use e.g. this. Next"), "Use e.g. this.");
        assert_eq!(summary("Edits text. `x` must match."), "Edits text.");
        assert_eq!(summary("No period"), "No period");
    }
}
