//! Editing a config file as text: adding a rule to `[permissions] allow` (the chat's
//! "always allow" answer) and removing retired keys (the one-time migration of the user
//! config), so that comments, key order and every other setting survive. Each edit is parsed
//! back before it atomically replaces the file; loading config is `load`'s job.

use std::path::Path;

use super::document::from_str;
use super::ConfigError;
use toml::{Table, Value};

/// Adds `rule` to `[permissions] allow` in the TOML file at `path`, creating the file or
/// the table when missing. The file is edited as text so comments, key order and every
/// other setting survive; the result is parsed back to make sure it says what we meant
/// before it atomically replaces the original.
pub fn persist_allow_rule(path: &Path, rule: &str) -> Result<(), ConfigError> {
    let original = read_or_empty(path)?;
    let parsed: Table = from_str(&original).map_err(|e| {
        ConfigError::Invalid(format!(
            "{} is not valid TOML ({e}); fix it, then allow again",
            path.display(),
        ))
    })?;
    if allow_list(&parsed).is_some_and(|list| list.iter().any(|r| r == rule)) {
        return Ok(());
    }
    let edited = add_allow_rule(&original, rule);
    let check = from_str::<Table>(&edited);
    let ok = check
        .ok()
        .and_then(|t| allow_list(&t))
        .is_some_and(|list| list.iter().any(|r| r == rule));
    if !ok {
        return Err(ConfigError::Invalid(format!(
            "could not add the rule to {} automatically; add `{rule}` to [permissions] allow yourself",
            path.display()
        )));
    }
    crate::fsutil::write_atomic(path, edited.as_bytes(), None).map_err(|source| {
        ConfigError::Write {
            path: path.to_path_buf(),
            source,
        }
    })
}

/// Removes the single-line settings `keys` (dotted paths such as `agent.max_steps`) from the
/// TOML file at `path`, whose current text is `original`, leaving every other line as it was.
/// Returns the keys removed, in file order; nothing is written when none is there. The result
/// must parse to the original table minus those keys, or the file is left alone and the error
/// asks the user to remove them by hand.
pub fn remove_keys(path: &Path, original: &str, keys: &[&str]) -> Result<Vec<String>, ConfigError> {
    let (edited, removed) = without_keys(original, keys);
    if removed.is_empty() {
        return Ok(removed);
    }
    let expected = from_str::<Table>(original).ok().map(|mut table| {
        for key in &removed {
            let parts: Vec<&str> = key.split('.').collect();
            remove_dotted(&mut table, &parts);
        }
        table
    });
    let ok = expected.is_some() && from_str::<Table>(&edited).ok() == expected;
    if !ok {
        return Err(ConfigError::Invalid(format!(
            "could not remove {} from {} automatically; remove them yourself",
            removed
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", "),
            path.display()
        )));
    }
    crate::fsutil::write_atomic(path, edited.as_bytes(), None).map_err(|source| {
        ConfigError::Write {
            path: path.to_path_buf(),
            source,
        }
    })?;
    Ok(removed)
}

/// Sets the string key `[agent] KEY` in the TOML file at `path` to `value`, or removes it
/// with `None` (`/persona`), creating the file or the table when missing and keeping every
/// other line. The result is parsed back before it atomically replaces the file.
pub fn set_agent_string(path: &Path, key: &str, value: Option<&str>) -> Result<(), ConfigError> {
    let original = read_or_empty(path)?;
    let dotted = format!("agent.{key}");
    let (mut edited, _) = without_keys(&original, &[dotted.as_str()]);
    if let Some(value) = value {
        let line = format!("{key} = {}\n", serde_json::Value::String(value.to_string()));
        edited = insert_in_table(&edited, "agent", &line);
    }
    let now = from_str::<Table>(&edited).ok().map(|t| {
        t.get("agent")
            .and_then(|a| a.get(key))
            .and_then(|v| v.as_str())
            .map(str::to_string)
    });
    if now != Some(value.map(str::to_string)) {
        return Err(ConfigError::Invalid(format!(
            "could not set [agent] {key} in {} automatically; edit it yourself",
            path.display()
        )));
    }
    if let Some(dir) = path.parent() {
        crate::fsutil::create_private_dir(dir).map_err(|source| ConfigError::Write {
            path: path.to_path_buf(),
            source,
        })?;
    }
    crate::fsutil::write_atomic(path, edited.as_bytes(), None).map_err(|source| {
        ConfigError::Write {
            path: path.to_path_buf(),
            source,
        }
    })
}

/// The file's text, bounded like every config file the loader reads; empty when it is absent.
fn read_or_empty(path: &Path) -> Result<String, ConfigError> {
    match super::load::read_bounded(path) {
        Ok(text) => Ok(text),
        Err(ConfigError::Read { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Ok(String::new())
        }
        Err(err) => Err(err),
    }
}

/// `line` put right under the `[table]` header, or a new table at the end.
fn insert_in_table(text: &str, table: &str, line: &str) -> String {
    let header = format!("[{table}]");
    let mut out = String::with_capacity(text.len() + line.len() + header.len() + 2);
    let mut done = false;
    for current in text.split_inclusive('\n') {
        out.push_str(current);
        if !done && current.split('#').next().unwrap_or("").trim() == header {
            if !current.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(line);
            done = true;
        }
    }
    if !done {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&header);
        out.push('\n');
        out.push_str(line);
    }
    out
}

fn remove_dotted(table: &mut Table, parts: &[&str]) {
    match parts {
        [] => {}
        [key] => {
            table.remove(*key);
        }
        [first, rest @ ..] => {
            if let Some(Value::Table(inner)) = table.get_mut(*first) {
                remove_dotted(inner, rest);
            }
        }
    }
}

/// The text edit behind [`remove_keys`]: drops each `key = value` line whose dotted path (its
/// table header, then the bare key) is in `keys`. Values spanning lines are left for the
/// parse-back check to catch.
fn without_keys(text: &str, keys: &[&str]) -> (String, Vec<String>) {
    let mut out = String::with_capacity(text.len());
    let mut removed = Vec::new();
    let mut table = String::new();
    for line in text.split_inclusive('\n') {
        let code = line.split('#').next().unwrap_or("").trim();
        if let Some(header) = code.strip_prefix('[') {
            table = match header.strip_prefix('[') {
                // An array of tables holds no retired key; nothing below it matches.
                Some(_) => "[[]]".into(),
                None => header.trim_end_matches(']').trim().to_string(),
            };
        } else if let Some((key, _)) = code.split_once('=') {
            let key: String = key.split('.').map(str::trim).collect::<Vec<_>>().join(".");
            let dotted = if table.is_empty() {
                key
            } else {
                format!("{table}.{key}")
            };
            if keys.contains(&dotted.as_str()) {
                removed.push(dotted);
                continue;
            }
        }
        out.push_str(line);
    }
    (out, removed)
}

fn allow_list(table: &Table) -> Option<Vec<String>> {
    let allow = table
        .get("permissions")?
        .as_table()?
        .get("allow")?
        .as_array()?;
    Some(
        allow
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
    )
}

/// The text edit behind [`persist_allow_rule`]: appends to an existing `allow` array of
/// `[permissions]`, else adds the key under the table header, else appends the table.
fn add_allow_rule(text: &str, rule: &str) -> String {
    let quoted = serde_json::Value::String(rule.to_string()).to_string();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let header = lines.iter().position(|l| is_table_header(l, "permissions"));
    let Some(header) = header else {
        let mut out = text.to_string();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!("[permissions]\nallow = [{quoted}]\n"));
        return out;
    };
    let table_end = lines[header + 1..]
        .iter()
        .position(|l| l.trim_start().starts_with('['))
        .map_or(lines.len(), |i| header + 1 + i);
    let offset_of = |line: usize| lines[..line].iter().map(|l| l.len()).sum::<usize>();
    for (i, line) in lines.iter().enumerate().take(table_end).skip(header + 1) {
        let trimmed = line.trim_start();
        let is_allow = trimmed
            .strip_prefix("allow")
            .is_some_and(|rest| rest.trim_start().starts_with('='));
        if !is_allow {
            continue;
        }
        let start = offset_of(i) + line.find('[').unwrap_or(line.len());
        if let Some(insert) = array_insert_point(text, start) {
            let (at, sep) = insert;
            return format!("{}{sep}{quoted}{}", &text[..at], &text[at..]);
        }
        return text.to_string();
    }
    let at = offset_of(header + 1);
    let mut out = text[..at].to_string();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!("allow = [{quoted}]\n"));
    out.push_str(&text[at..]);
    out
}

fn is_table_header(line: &str, name: &str) -> bool {
    let line = line.split('#').next().unwrap_or("").trim();
    line.strip_prefix('[')
        .and_then(|l| l.strip_suffix(']'))
        .is_some_and(|inner| inner.trim() == name)
}

/// Scans the array starting at `open` (a `[`) to its closing bracket, skipping strings and
/// comments; returns where to insert a new element and the separator it needs.
fn array_insert_point(text: &str, open: usize) -> Option<(usize, &'static str)> {
    let bytes = text.as_bytes();
    if bytes.get(open) != Some(&b'[') {
        return None;
    }
    let mut depth = 0;
    let mut i = open;
    let mut last_significant = open;
    while i < bytes.len() {
        match bytes[i] {
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            quote @ (b'"' | b'\'') => {
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    if quote == b'"' && bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                last_significant = i;
            }
            b'[' => {
                depth += 1;
                last_significant = i;
            }
            b']' => {
                depth -= 1;
                if depth == 0 {
                    let sep = match bytes[last_significant] {
                        b'[' => "",
                        b',' => " ",
                        _ => ", ",
                    };
                    return Some((last_significant + 1, sep));
                }
                last_significant = i;
            }
            b if b.is_ascii_whitespace() => {}
            _ => last_significant = i,
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;

    fn rules_in(text: &str) -> Vec<String> {
        allow_list(&toml::from_str(text).unwrap()).unwrap_or_default()
    }

    #[test]
    fn creates_the_table_in_an_empty_or_missing_file() {
        assert_eq!(
            add_allow_rule("", "Bash(git status)"),
            "[permissions]\nallow = [\"Bash(git status)\"]\n"
        );
        let text = "# my project\ndefault_model = \"x\" # pinned\n\n[agent]\ntemperature = 0.2";
        let out = add_allow_rule(text, "Edit(./a.rs)");
        assert!(out.starts_with(text), "{out}");
        assert_eq!(rules_in(&out), vec!["Edit(./a.rs)"]);
    }

    #[test]
    fn appends_to_existing_arrays_keeping_comments() {
        let text = "[permissions]\n# rules we trust\nmode = \"ask\"\nallow = [\n  \"Bash(ls)\",  # listing\n  \"Read\" # reading ] bracket in comment\n]\ndeny = [\"Bash(rm -rf*)\"]\n\n[ui]\ncursor_shape = \"block\"\n";
        let out = add_allow_rule(text, "Bash(go test:*)");
        assert_eq!(rules_in(&out), vec!["Bash(ls)", "Read", "Bash(go test:*)"]);
        assert!(out.contains("# listing") && out.contains("# rules we trust"));
        assert!(out.contains("cursor_shape = \"block\""));
        let inline = add_allow_rule("[permissions]\nallow = []\n", "Edit");
        assert_eq!(inline, "[permissions]\nallow = [\"Edit\"]\n");
        let trailing = add_allow_rule("[permissions]\nallow = [\"A\",]\n", "B");
        assert_eq!(rules_in(&trailing), vec!["A", "B"]);
        let tricky = add_allow_rule("[permissions]\nallow = [\"Bash(echo \\\"]\\\")\"]\n", "C");
        assert_eq!(rules_in(&tricky), vec!["Bash(echo \"]\")", "C"]);
    }

    #[test]
    fn adds_the_key_under_an_existing_table() {
        let text = "[permissions] # ours\nmode = \"ask\"\n[sandbox]\nnetwork = true\n";
        let out = add_allow_rule(text, "Bash(make)");
        assert_eq!(
            out,
            "[permissions] # ours\nallow = [\"Bash(make)\"]\nmode = \"ask\"\n[sandbox]\nnetwork = true\n"
        );
    }

    const RETIRED: &[&str] = &[
        "agent.max_steps",
        "agent.planner_max_steps",
        "planner_max_steps",
    ];

    #[test]
    fn retired_keys_are_cut_out_line_by_line() {
        let text = "# top\nplanner_max_steps = 3 # old\nmodel = \"m\"\n\n[agent] # agent\n  max_steps=50\ntemperature = 0.1 # keep\nagent_max_steps = 1\n[[providers]]\nname = \"x\"\nmax_steps = 2\n[ui]\nplanner_max_steps = 4\n";
        let (out, removed) = without_keys(text, RETIRED);
        assert_eq!(removed, vec!["planner_max_steps", "agent.max_steps"]);
        assert_eq!(
            out,
            "# top\nmodel = \"m\"\n\n[agent] # agent\ntemperature = 0.1 # keep\nagent_max_steps = 1\n[[providers]]\nname = \"x\"\nmax_steps = 2\n[ui]\nplanner_max_steps = 4\n"
        );
        let (out, removed) = without_keys("agent.max_steps = 5\nx = 1", RETIRED);
        assert_eq!(
            (out.as_str(), removed),
            ("x = 1", vec!["agent.max_steps".to_string()])
        );
    }

    #[test]
    fn removing_keys_writes_only_a_file_that_says_the_same_without_them() {
        let dir = TempDir::new("retire");
        let text = "# keep me\n[agent]\nmax_steps = 9\ntemperature = 0.5\n";
        let file = dir.write("config.toml", text);
        assert_eq!(
            remove_keys(&file, text, RETIRED).unwrap(),
            vec!["agent.max_steps"]
        );
        let now = std::fs::read_to_string(&file).unwrap();
        assert_eq!(now, "# keep me\n[agent]\ntemperature = 0.5\n");
        assert!(remove_keys(&file, &now, RETIRED).unwrap().is_empty());
        // A value over several lines would leave half a setting: refused, file untouched.
        let odd = "[agent]\nmax_steps = [\n1]\n";
        std::fs::write(&file, odd).unwrap();
        let err = remove_keys(&file, odd, RETIRED).unwrap_err().to_string();
        assert!(err.contains("remove them yourself"), "{err}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), odd);
    }

    #[test]
    fn persisting_writes_once_and_refuses_broken_files() {
        let dir = TempDir::new("persist");
        let file = dir.write("reasonix.toml", "# keep me\n[ui]\ncursor_shape = \"bar\"\n");
        persist_allow_rule(&file, "Bash(cargo test:*)").unwrap();
        persist_allow_rule(&file, "Bash(cargo test:*)").unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with("# keep me\n"));
        assert_eq!(text.matches("cargo test").count(), 1, "{text}");
        std::fs::write(&file, "[permissions\n").unwrap();
        let err = persist_allow_rule(&file, "X").unwrap_err().to_string();
        assert!(err.contains("not valid TOML"), "{err}");
        let missing = dir.join("new/reasonix.toml");
        assert!(
            persist_allow_rule(&missing, "X").is_err(),
            "no parent directory"
        );
    }

    #[test]
    fn the_persona_keys_are_set_replaced_and_removed_in_place() {
        let dir = crate::fsutil::scratch::TempDir::new("persona-edit");
        let path = dir.join("config.toml");
        std::fs::write(
            &path,
            "# mine\n[agent]\ntemperature = 0.5\n\n[tools]\nenabled = []\n",
        )
        .unwrap();
        set_agent_string(&path, "persona_prefix", Some("Be \"terse\".")).unwrap();
        set_agent_string(&path, "persona_prefix", Some("Be kind.")).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "# mine\n[agent]\npersona_prefix = \"Be kind.\"\ntemperature = 0.5\n\n[tools]\nenabled = []\n"
        );
        set_agent_string(&path, "persona_prefix", None).unwrap();
        set_agent_string(&path, "persona_suffix", Some("Bye.")).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            !text.contains("persona_prefix") && text.contains("persona_suffix = \"Bye.\""),
            "{text}"
        );
        let fresh = dir.join("new/config.toml");
        set_agent_string(&fresh, "persona_suffix", Some("x")).unwrap();
        assert_eq!(
            std::fs::read_to_string(&fresh).unwrap(),
            "[agent]\npersona_suffix = \"x\"\n"
        );
    }
}
