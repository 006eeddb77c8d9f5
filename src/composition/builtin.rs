//! The compositions shipped in the binary: `builtin:general` (Everyday partner, the ordinary
//! configuration without a binding) and `builtin:minimal` (Lightweight partner: a concise
//! software-engineer persona, `bash` and `view_image` plus the `ask` control, native
//! compaction, no custom skills, commands, MCP servers, optional hooks or subagents).
//! Read-only templates.

use super::{Definition, Modules, Persona, Selection, SCHEMA_VERSION};

pub const GENERAL: &str = "general";
pub const MINIMAL: &str = "minimal";

/// The opener of the Lightweight partner, put before Reasonix's own system instructions.
pub const MINIMAL_PERSONA: &str = "You are a concise software engineer. Answer briefly, \
work in the terminal with bash, and read images with view_image when the task involves one.";

/// The tools `builtin:minimal` binds, and nothing else: its terminal, image reading, and the
/// host control it retains to ask the user a question (AGENT_COMPOSITIONS: "It retains the
/// host controls needed to answer and ask questions").
pub const MINIMAL_TOOLS: &[&str] = &["bash", "view_image", "ask"];

/// Every built-in, in catalog order.
pub fn all() -> Vec<Definition> {
    [GENERAL, MINIMAL].iter().filter_map(|n| get(n)).collect()
}

/// A built-in by its name part.
pub fn get(name: &str) -> Option<Definition> {
    let base = Definition {
        schema_version: SCHEMA_VERSION,
        id: name.to_string(),
        revision: 1,
        ..Definition::default()
    };
    match name {
        GENERAL => Some(Definition {
            name: "Everyday partner".into(),
            description: "Inherits the current configuration for everyday code, file and \
                          research work (no binding)."
                .into(),
            ..base
        }),
        MINIMAL => Some(Definition {
            name: "Lightweight partner".into(),
            description: "A concise system persona, terminal (bash) and image reading \
                          (view_image), with native context compaction. Requires a \
                          vision-capable model."
                .into(),
            persona: Persona {
                prefix: MINIMAL_PERSONA.into(),
                suffix: String::new(),
            },
            modules: Modules {
                tools: Selection::Only(MINIMAL_TOOLS.iter().map(|t| t.to_string()).collect()),
                skills: Selection::Only(Vec::new()),
                mcp_servers: Selection::Only(Vec::new()),
                hooks: Selection::Only(Vec::new()),
                commands: Selection::Only(Vec::new()),
            },
            ..base
        }),
        _ => None,
    }
}

/// Whether a built-in needs a vision-capable model.
pub fn needs_vision(name: &str) -> bool {
    name == MINIMAL
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::composition::{check_authority, Scope};

    #[test]
    fn built_ins_pass_their_own_authority_check_and_minimal_selects_its_three_tools() {
        for definition in all() {
            check_authority(Scope::Builtin, &definition).unwrap();
        }
        let minimal = get(MINIMAL).unwrap();
        assert_eq!(
            minimal.modules.tools,
            Selection::Only(vec!["bash".into(), "view_image".into(), "ask".into()])
        );
        for group in [
            &minimal.modules.skills,
            &minimal.modules.mcp_servers,
            &minimal.modules.commands,
            &minimal.modules.hooks,
        ] {
            assert_eq!(*group, Selection::Only(Vec::new()));
        }
        assert_eq!(get(GENERAL).unwrap().modules, Modules::default());
        assert!(get("research").is_none(), "retired entries are gone");
    }
}
