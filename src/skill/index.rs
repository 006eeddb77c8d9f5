//! The skill index pinned in the system prompt: one line per skill the model may load. It is
//! part of the session's first message, built once, so its bytes never change during a
//! session; it lists skills sorted by name so the same store always gives the same text.
//!
//! Left out: `invocation: manual` skills (only the user's `/name` runs them) and repository
//! skills of an untrusted workspace, whose one-line descriptions would otherwise reach the
//! system prompt, where text carries more weight than a file the model reads. The `skill`
//! tool can still load an untrusted skill's body by name, as it could read any file.

use super::{Invocation, RunAs, Skill};

/// The index section, or `None` when no skill qualifies.
pub fn render(skills: &[Skill]) -> Option<String> {
    let mut listed: Vec<&Skill> = skills.iter().filter(|s| indexed(s)).collect();
    if listed.is_empty() {
        return None;
    }
    listed.sort_by(|a, b| a.name.cmp(&b.name));
    let mut text = String::from(
        "# Skills\n\nThese skills hold instructions for particular tasks. When a task matches \
         one, load it with the `skill` tool (its name, and any arguments) before you start, \
         then follow it.\n",
    );
    for skill in listed {
        let kind = match skill.run_as {
            RunAs::Inline => "",
            RunAs::Subagent => " (runs as a subagent)",
        };
        text.push_str(&format!("- {}: {}{kind}\n", skill.name, skill.description));
    }
    Some(text)
}

/// Whether the model may discover `skill` through the index.
pub fn indexed(skill: &Skill) -> bool {
    skill.invocation == Invocation::Auto && skill.trusted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skill::Scope;

    fn skill(name: &str, invocation: Invocation, trusted: bool) -> Skill {
        Skill {
            name: name.into(),
            description: format!("about {name}"),
            run_as: RunAs::Inline,
            invocation,
            model: None,
            effort: None,
            allowed_tools: Vec::new(),
            body: String::new(),
            dir: Default::default(),
            scope: Scope::User,
            trusted,
            references: Vec::new(),
            has_scripts: false,
        }
    }

    #[test]
    fn the_index_is_sorted_and_leaves_out_manual_and_untrusted_skills() {
        let skills = [
            skill("zeta", Invocation::Auto, true),
            skill("alpha", Invocation::Auto, true),
            skill("hidden", Invocation::Manual, true),
            skill("repo", Invocation::Auto, false),
        ];
        let text = render(&skills).unwrap();
        assert!(
            text.ends_with("- alpha: about alpha\n- zeta: about zeta\n"),
            "{text}"
        );
        assert!(!text.contains("hidden") && !text.contains("repo"), "{text}");
        let mut reversed = skills.to_vec();
        reversed.reverse();
        assert_eq!(render(&reversed).unwrap(), text);
        assert_eq!(render(&skills[2..]), None);
    }
}
