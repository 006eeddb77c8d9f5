//! `${VAR}` expansion for config values, and the provider-key store `<home>/.env`.
//!
//! Expansion rules (shell-like, deliberately small):
//! - `${NAME}` is the variable's value; unset is an error naming it, set-but-empty is `""`.
//! - `${NAME:-default}` is the value, or `default` when unset or empty. The default is literal
//!   (not expanded again).
//! - `$$` is a literal `$` (as in custom slash commands), so `$${NAME}` writes `${NAME}`.
//! - Any other `$` is literal: `Bearer $TOKEN` stays as written.
//!
//! Where values come from is the caller's choice, with one rule: the user's own settings
//! (provider headers, their `[[plugins]]`, `[sandbox]`) expand only from the process
//! environment and `<home>/.env`. A workspace's `.env` is repository content; only entries a
//! project file declared may read it, and only while the workspace is trusted with it
//! (`mcp::config`), so a repository never picks a URL, a header or a write root of the user's.
//!
//! The store is `KEY=VALUE` lines. Reading skips blank lines, `#` comments and lines without
//! `=`, accepts an `export ` prefix and strips one pair of matching quotes. Writing replaces or
//! appends one key and keeps every other line as it was; the file is always left at mode 0600.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use super::paths;
use super::ConfigError;
use crate::fsutil;
use crate::text::unquote;

/// Expands `${VAR}` and `${VAR:-default}` in `input` using `lookup`.
pub fn expand(input: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, ConfigError> {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(body_start) = after.strip_prefix('{') {
            let end = body_start.find('}').ok_or_else(|| {
                ConfigError::Invalid(format!(
                    "unterminated `${{` in `{input}`; close it with `}}` or write `$$` for a literal `$`"
                ))
            })?;
            out.push_str(&substitute(&body_start[..end], lookup)?);
            rest = &body_start[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// One `${...}` body: `NAME` or `NAME:-default`.
fn substitute(body: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, ConfigError> {
    let (name, default) = match body.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (body, None),
    };
    if !is_var_name(name) {
        return Err(ConfigError::Invalid(format!(
            "`${{{body}}}` is not a variable reference; names are letters, digits and `_`"
        )));
    }
    match (lookup(name), default) {
        (Some(value), Some(default)) if value.is_empty() => Ok(default.to_string()),
        (Some(value), _) => Ok(value),
        (None, Some(default)) => Ok(default.to_string()),
        (None, None) => Err(ConfigError::Invalid(format!(
            "environment variable `{name}` is not set (used as `${{{name}}}`); set it or write `${{{name}:-default}}`"
        ))),
    }
}

/// `[A-Za-z_][A-Za-z0-9_]*`: the names a shell would export.
pub fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The variable names referenced as `${NAME}` or `${NAME:-...}` in `input`.
pub fn referenced_names(input: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = input;
    while let Some(pos) = rest.find('$') {
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            rest = tail;
            continue;
        }
        rest = after;
        let Some(body) = after.strip_prefix('{') else {
            continue;
        };
        let Some(end) = body.find('}') else { break };
        let name = body[..end].split(":-").next().unwrap_or_default();
        if is_var_name(name) {
            names.push(name.to_string());
        }
        rest = &body[end + 1..];
    }
    names
}

/// The keys in `<home>/.env`; an absent file is an empty store.
pub fn read_store(home: &Path) -> Result<BTreeMap<String, String>, ConfigError> {
    let path = paths::env_file(home);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(parse_store(&text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(BTreeMap::new()),
        Err(source) => Err(ConfigError::Read { path, source }),
    }
}

/// Parses store text; malformed lines are skipped, a repeated key keeps its first value.
pub fn parse_store(text: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for line in text.lines() {
        if let Some((key, value)) = parse_line(line) {
            map.entry(key.to_string())
                .or_insert_with(|| unquote(value).to_string());
        }
    }
    map
}

/// `KEY=VALUE` (optionally `export KEY=VALUE`) -> (KEY, raw VALUE).
fn parse_line(line: &str) -> Option<(&str, &str)> {
    let line = line.trim_start();
    if line.starts_with('#') {
        return None;
    }
    let line = line.strip_prefix("export ").unwrap_or(line);
    let (key, value) = line.split_once('=')?;
    let key = key.trim();
    is_var_name(key).then_some((key, value.trim()))
}

/// Sets `key` in `<home>/.env`, creating the home (0700) and the file as needed. Other lines,
/// comments included, are kept; later duplicates of `key` are dropped so reads are unambiguous.
/// The file is written atomically with mode 0600.
pub fn store_key(home: &Path, key: &str, value: &str) -> Result<(), ConfigError> {
    if !is_var_name(key) {
        return Err(ConfigError::Invalid(format!(
            "`{key}` is not a valid variable name; use letters, digits and `_`"
        )));
    }
    if value.contains(['\n', '\r', '\0']) {
        return Err(ConfigError::Invalid(format!(
            "the value for `{key}` contains a line break; store a single line"
        )));
    }
    create_home(home)?;
    let path = paths::env_file(home);
    let existing = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
        Err(source) => return Err(ConfigError::Read { path, source }),
    };
    let updated = replace_key(&existing, key, value);
    fsutil::write_atomic(&path, updated.as_bytes(), Some(0o600))
        .map_err(|source| ConfigError::Write { path, source })
}

fn replace_key(existing: &str, key: &str, value: &str) -> String {
    let assignment = format!("{key}={value}");
    let mut out = String::with_capacity(existing.len() + assignment.len() + 1);
    let mut written = false;
    for line in existing.lines() {
        if parse_line(line).is_some_and(|(k, _)| k == key) {
            if !written {
                out.push_str(&assignment);
                out.push('\n');
                written = true;
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    if !written {
        out.push_str(&assignment);
        out.push('\n');
    }
    out
}

/// Creates the home directory private to the user when it does not exist yet.
pub fn create_home(home: &Path) -> Result<(), ConfigError> {
    if home.is_dir() {
        return Ok(());
    }
    crate::platform::dir_mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(home)
        .map_err(|source| ConfigError::Write {
            path: home.to_path_buf(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expands_braced_references_and_defaults() {
        assert_eq!(expand("${HOME}/.ssh", &vars).unwrap(), "/home/u/.ssh");
        assert_eq!(expand("${NOPE:-x y}", &vars).unwrap(), "x y");
        assert_eq!(expand("${EMPTY:-fallback}", &vars).unwrap(), "fallback");
        assert_eq!(expand("a${EMPTY}b", &vars).unwrap(), "ab");
        assert_eq!(expand("${HOME:-unused}", &vars).unwrap(), "/home/u");
        assert_eq!(expand("no refs", &vars).unwrap(), "no refs");
    }

    #[test]
    fn dollar_rules_are_literal_except_braces_and_double_dollar() {
        assert_eq!(expand("Bearer $TOKEN", &vars).unwrap(), "Bearer $TOKEN");
        assert_eq!(expand("cost $5$", &vars).unwrap(), "cost $5$");
        assert_eq!(expand("$${HOME}", &vars).unwrap(), "${HOME}");
        assert_eq!(expand("a$$b", &vars).unwrap(), "a$b");
    }

    #[test]
    fn unset_unterminated_and_bad_names_are_errors_that_say_how_to_fix() {
        let err = expand("Bearer ${STRIPE_KEY}", &vars)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "config: environment variable `STRIPE_KEY` is not set (used as `${STRIPE_KEY}`); set it or write `${STRIPE_KEY:-default}`"
        );
        let err = expand("${HOME", &vars).unwrap_err().to_string();
        assert!(err.contains("unterminated"), "{err}");
        let err = expand("${1X}", &vars).unwrap_err().to_string();
        assert!(err.contains("not a variable reference"), "{err}");
    }

    #[test]
    fn finds_referenced_names() {
        assert_eq!(
            referenced_names("Bearer ${A} ${B:-x} $${C} $D ${bad name}"),
            vec!["A".to_string(), "B".to_string()]
        );
    }

    #[test]
    fn store_parsing_is_lenient() {
        let map = parse_store(
            "# comment\n\nA=1\nexport B = \"two\"\nnot a line\nC='3'\nA=dup\n9X=bad\nD=a=b\n",
        );
        let expected: BTreeMap<String, String> =
            [("A", "1"), ("B", "two"), ("C", "3"), ("D", "a=b")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        assert_eq!(map, expected);
    }

    #[test]
    fn replacing_keeps_other_lines_and_drops_duplicates() {
        let before = "# keys\nA=1\nB=2\nexport A=3\n";
        assert_eq!(replace_key(before, "A", "new"), "# keys\nA=new\nB=2\n");
        assert_eq!(replace_key("B=2", "A", "x"), "B=2\nA=x\n");
        assert_eq!(replace_key("", "A", "x"), "A=x\n");
    }
}
