//! The part of JSON Schema that guards the permission layer: closing a built-in tool's schema
//! (`additionalProperties: false` on every object it describes) and refusing, before the gate
//! sees a call, arguments such a schema does not allow. Types and required keys are left to
//! each tool's typed argument access, which already explains them to the model and accepts a
//! number sent as a string.

use serde_json::Value;

/// Sets `additionalProperties: false` on `schema` and on every object schema nested in its
/// properties and array items, unless one says otherwise.
pub fn close(schema: &mut Value) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if object.contains_key("properties") {
        object
            .entry("additionalProperties")
            .or_insert(Value::Bool(false));
    }
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        for property in properties.values_mut() {
            close(property);
        }
    }
    if let Some(items) = object.get_mut("items") {
        close(items);
    }
}

/// `Err` naming the first argument `schema` does not allow, with its location
/// (`edits[2].path`).
pub fn check(schema: &Value, args: &Value) -> Result<(), String> {
    check_at(schema, args, "")
}

fn check_at(schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    match value {
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
            for (key, item) in map {
                let location = if at.is_empty() {
                    key.clone()
                } else {
                    format!("{at}.{key}")
                };
                match properties.and_then(|p| p.get(key)) {
                    Some(property) => check_at(property, item, &location)?,
                    None if closed => return Err(format!("unknown argument `{location}`")),
                    None => {}
                }
            }
            Ok(())
        }
        Value::Array(items) => match schema.get("items") {
            Some(item_schema) => items
                .iter()
                .enumerate()
                .try_for_each(|(i, item)| check_at(item_schema, item, &format!("{at}[{i}]"))),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

/// The top-level argument names, for the error message: "`path`, `offset`, `limit`".
pub fn accepted(schema: &Value) -> String {
    let names: Vec<String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(|k| format!("`{k}`")).collect())
        .unwrap_or_default();
    if names.is_empty() {
        "no arguments".to_string()
    } else {
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn closed() -> Value {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "edits": {"type": "array", "items": {"type": "object", "properties": {"old": {"type": "string"}}}},
                "free": {"type": "object"}
            }
        });
        close(&mut schema);
        schema
    }

    #[test]
    fn closing_reaches_nested_objects_but_not_free_form_ones() {
        let schema = closed();
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(
            schema["properties"]["edits"]["items"]["additionalProperties"],
            false
        );
        assert!(schema["properties"]["free"]
            .get("additionalProperties")
            .is_none());
    }

    #[test]
    fn unknown_arguments_are_named_with_their_location() {
        let schema = closed();
        assert_eq!(
            check(&schema, &json!({"path": "a", "free": {"x": 1}})),
            Ok(())
        );
        assert_eq!(
            check(&schema, &json!({"path": "a", "command": "ls"})),
            Err("unknown argument `command`".to_string())
        );
        assert_eq!(
            check(
                &schema,
                &json!({"edits": [{"old": "x"}, {"old": "y", "path": "z"}]})
            ),
            Err("unknown argument `edits[1].path`".to_string())
        );
        assert_eq!(accepted(&schema), "`edits`, `free`, `path`");
    }

    #[test]
    fn an_open_schema_lets_extra_arguments_through() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        assert_eq!(check(&schema, &json!({"a": "x", "b": 1})), Ok(()));
    }
}
