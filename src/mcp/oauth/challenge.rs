//! The `WWW-Authenticate` header of a 401 or 403 (RFC 6750 §3, RFC 9728 §5.1): the Bearer
//! challenge's `resource_metadata`, `scope` and `error`. Other schemes in the same header are
//! skipped; a header without a Bearer challenge yields an empty one.

/// What a Bearer challenge asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    pub resource_metadata: Option<String>,
    pub scope: Option<String>,
    pub error: Option<String>,
}

impl Challenge {
    pub fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// Parses every challenge in `header` and keeps the Bearer one's parameters.
pub fn parse(header: &str) -> Challenge {
    let mut challenge = Challenge::default();
    let mut in_bearer = false;
    let mut rest = header.trim();
    while !rest.is_empty() {
        rest = rest.trim_start_matches([',', ' ', '\t']);
        let token_end = rest
            .find(|c: char| c == '=' || c == ',' || c.is_whitespace())
            .unwrap_or(rest.len());
        let token = &rest[..token_end];
        let after = rest[token_end..].trim_start_matches([' ', '\t']);
        if let Some(value_text) = after.strip_prefix('=').filter(|_| !token.is_empty()) {
            // An auth-param of the current challenge.
            let value_text = value_text.trim_start_matches([' ', '\t']);
            let (value, remaining) = read_value(value_text);
            if in_bearer {
                let slot = match token.to_ascii_lowercase().as_str() {
                    "resource_metadata" => Some(&mut challenge.resource_metadata),
                    "scope" => Some(&mut challenge.scope),
                    "error" => Some(&mut challenge.error),
                    _ => None,
                };
                if let Some(slot) = slot {
                    slot.get_or_insert(value);
                }
            }
            rest = remaining;
        } else {
            // A scheme name starts a new challenge (a token68 after it is skipped as a param
            // without a value).
            if !token.is_empty() {
                in_bearer = token.eq_ignore_ascii_case("bearer");
            }
            let skip = match token.is_empty() {
                true => rest.chars().next().map_or(rest.len(), char::len_utf8),
                false => token_end,
            };
            rest = &rest[skip..];
        }
    }
    challenge
}

/// A quoted string (with `\` escapes) or a token; returns it and what follows.
fn read_value(text: &str) -> (String, &str) {
    if let Some(quoted) = text.strip_prefix('"') {
        let mut value = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, escaped)) = chars.next() {
                        value.push(escaped);
                    }
                }
                '"' => return (value, &quoted[i + 1..]),
                other => value.push(other),
            }
        }
        return (value, "");
    }
    let end = text
        .find(|c: char| c == ',' || c.is_whitespace())
        .unwrap_or(text.len());
    (text[..end].to_string(), &text[end..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_parameters_are_read_quoted_or_not() {
        let c = parse(
            r#"Bearer realm="mcp", resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp", scope="files:read files:write""#,
        );
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://mcp.example/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(c.scope.as_deref(), Some("files:read files:write"));
        assert!(!c.insufficient_scope());
        let c = parse(r#"Bearer error=insufficient_scope, scope="a \"b\"""#);
        assert!(c.insufficient_scope());
        assert_eq!(c.scope.as_deref(), Some("a \"b\""));
    }

    #[test]
    fn other_schemes_do_not_lend_their_parameters() {
        let c = parse(r#"Basic realm="x", scope="basic-scope", Bearer scope="mine""#);
        assert_eq!(c.scope.as_deref(), Some("mine"));
        let c = parse(r#"Negotiate abc==, DPoP scope="no""#);
        assert_eq!(c, Challenge::default());
        assert_eq!(parse(""), Challenge::default());
        assert_eq!(parse("Bearer"), Challenge::default());
        // A header cut inside a quoted string still parses.
        assert_eq!(parse(r#"Bearer scope="a b"#).scope.as_deref(), Some("a b"));
        assert_eq!(parse("Bearer \u{3000}= \n=").scope, None);
    }
}
