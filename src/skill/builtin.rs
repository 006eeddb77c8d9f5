//! The subagent profiles shipped in the binary, as SKILL.md texts read by the same parser as
//! files. They rank below every skill root: a project or user skill of the same name wins
//! (that is how a user replaces one), and they have no file anyone could edit.

use std::path::Path;

use super::{frontmatter, Scope, Skill};

const EXPLORE: &str = "\
---
name: explore
description: Read-only codebase research that answers one question
runAs: subagent
invocation: manual
---
You are a research subagent inside a coding agent. You can read, list and search files in the
workspace; you cannot change anything. Answer the task you are given and nothing else:
find the relevant files, read what you need, and reply with a concise, factual answer that
names files and line numbers. Say what you could not find. Your reply is all the caller sees.
";

const REVIEW: &str = "\
---
name: review
description: Reviews the current uncommitted diff
runAs: subagent
invocation: manual
---
You are a code review subagent inside a coding agent. Run `git diff` (and `git diff --staged`)
with bash to see the current changes, read the surrounding code where you need context, and
review the change: correctness bugs first, then risky edge cases, missing tests and unclear
code. Do not edit files. Reply with a short list of findings, each naming the file and line,
most important first, or say that you found nothing worth changing. Your reply is all the
caller sees.
";

/// Profiles that run with the read-only registry whatever the call asks.
const READ_ONLY: &[&str] = &["explore"];

/// Every built-in profile, parsed.
pub fn profiles() -> Vec<Skill> {
    [EXPLORE, REVIEW]
        .iter()
        .filter_map(|text| parse(text))
        .collect()
}

/// The built-in profile called `name`.
pub fn profile(name: &str) -> Option<Skill> {
    profiles().into_iter().find(|p| p.name == name)
}

/// Whether a built-in profile only reads (a stored skill of the same name does not).
pub fn is_read_only(skill: &Skill) -> bool {
    skill.scope == Scope::Builtin && READ_ONLY.contains(&skill.name.as_str())
}

fn parse(text: &str) -> Option<Skill> {
    let doc = frontmatter::parse(text).ok()?;
    let (mut skill, _) = super::from_document(doc, Path::new("<built-in>/SKILL.md"), "").ok()?;
    skill.scope = Scope::Builtin;
    skill.dir = Default::default();
    Some(skill)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skill::{Invocation, RunAs};

    #[test]
    fn the_built_in_profiles_parse_as_manual_subagents() {
        let all = profiles();
        let names: Vec<&str> = all.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["explore", "review"]);
        for profile in &all {
            assert_eq!(profile.run_as, RunAs::Subagent);
            assert_eq!(profile.invocation, Invocation::Manual);
            assert!(!profile.body.trim().is_empty());
        }
        assert!(is_read_only(&all[0]) && !is_read_only(&all[1]));
    }
}
