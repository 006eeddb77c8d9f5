//! Typed access to a tool call's JSON arguments, with errors phrased for the model.

use serde_json::Value;

use super::ToolError;

fn field<'a>(args: &'a Value, key: &str) -> Option<&'a Value> {
    args.get(key).filter(|v| !v.is_null())
}

fn wrong_type(key: &str, expected: &str, got: &Value) -> ToolError {
    ToolError::InvalidArgs(format!("`{key}` must be {expected}, got {got}"))
}

pub fn required_str<'a>(args: &'a Value, key: &str) -> Result<&'a str, ToolError> {
    match field(args, key) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(wrong_type(key, "a string", other)),
        None => Err(ToolError::InvalidArgs(format!(
            "missing required parameter `{key}`"
        ))),
    }
}

pub fn optional_str<'a>(args: &'a Value, key: &str) -> Result<Option<&'a str>, ToolError> {
    match field(args, key) {
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(wrong_type(key, "a string", other)),
        None => Ok(None),
    }
}

pub fn optional_bool(args: &Value, key: &str) -> Result<Option<bool>, ToolError> {
    match field(args, key) {
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(wrong_type(key, "true or false", other)),
        None => Ok(None),
    }
}

/// Accepts a non-negative integer, also when the model sends it as a numeric string.
pub fn optional_u64(args: &Value, key: &str) -> Result<Option<u64>, ToolError> {
    match field(args, key) {
        Some(Value::Number(n)) => n
            .as_u64()
            .map(Some)
            .ok_or_else(|| wrong_type(key, "a non-negative integer", &Value::Number(n.clone()))),
        Some(Value::String(s)) => s
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| wrong_type(key, "a non-negative integer", &Value::String(s.clone()))),
        Some(other) => Err(wrong_type(key, "a non-negative integer", other)),
        None => Ok(None),
    }
}

pub fn required_array<'a>(args: &'a Value, key: &str) -> Result<&'a Vec<Value>, ToolError> {
    match field(args, key) {
        Some(Value::Array(items)) => Ok(items),
        Some(other) => Err(wrong_type(key, "an array", other)),
        None => Err(ToolError::InvalidArgs(format!(
            "missing required parameter `{key}`"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn errors_name_the_parameter_and_what_was_expected() {
        let args = json!({"path": 3, "limit": "12", "flag": "yes"});
        assert_eq!(
            required_str(&args, "path").unwrap_err().to_string(),
            "invalid arguments: `path` must be a string, got 3"
        );
        assert_eq!(
            required_str(&args, "missing").unwrap_err().to_string(),
            "invalid arguments: missing required parameter `missing`"
        );
        assert_eq!(optional_u64(&args, "limit").unwrap(), Some(12));
        assert!(optional_bool(&args, "flag").is_err());
    }
}
