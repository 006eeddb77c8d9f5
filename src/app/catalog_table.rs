//! The agent composition catalog as one table: `reasonix agent list`, the chat's `/agent`
//! and the browser's `/agent` show the same rows (ID, source, revision, capabilities, name),
//! each entry's text made inert, since a project entry is a repository's file.

use crate::composition::store;
use crate::composition::{Definition, Scope, Selection};
use crate::text::sanitize;

/// The `/agent` and `reasonix agent list` table.
pub fn render_list(entries: &[store::Entry], default: Option<&str>) -> String {
    let mut text = String::new();
    for entry in entries {
        let id = entry.id.to_string();
        let mark = if default == Some(id.as_str()) {
            "*"
        } else {
            " "
        };
        let source = match entry.id.scope {
            Scope::Builtin => "built-in",
            Scope::User => "personal",
            Scope::Project => "project",
        };
        // The name is the file's text (a repository's, for a project entry): shown inert.
        text.push_str(&format!(
            "{mark} {id:<24} {source:<9} r{:<3} {:<40} {}\n",
            entry.definition.revision,
            sanitize(&capabilities(&entry.definition)),
            sanitize(&entry.definition.name)
        ));
    }
    text
}

fn capabilities(definition: &Definition) -> String {
    let group = |name: &str, s: &Selection| match s {
        Selection::Inherit => None,
        Selection::Only(ids) if ids.is_empty() => Some(format!("no {name}")),
        Selection::Only(ids) => Some(format!("{name}: {}", ids.join(","))),
    };
    let m = &definition.modules;
    let parts: Vec<String> = [
        group("tools", &m.tools),
        group("skills", &m.skills),
        group("mcp", &m.mcp_servers),
        group("hooks", &m.hooks),
        group("commands", &m.commands),
    ]
    .into_iter()
    .flatten()
    .collect();
    if parts.is_empty() {
        "inherits the configuration".into()
    } else {
        parts.join("; ")
    }
}
