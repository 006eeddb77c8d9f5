//! `reasonix skills list`: the skill store as this workspace sees it: each skill with its
//! scope, how it runs and where it lives, the roots searched, and every diagnostic (malformed
//! files with `file:line`, shadowed names, hidden skills). The store itself is
//! `app::skills`'s.

use serde_json::{json, Value};

use super::lex::{Arg, Lexer};
use super::{print_out, unknown_flag, Global};
use crate::app::skills::{roots, skills_trusted};
use crate::cli::error::{exit, Error};
use crate::skill::store::{self, Store};
use crate::skill::{Invocation, RunAs, Skill};

pub const HELP: &str = "\
Usage: reasonix skills [list] [--json]

Lists the skills this workspace sees, nearest scope first in precedence: the project's
.reasonix/skills/, <home>/skills/, ~/.agents/skills/, the project's .claude/skills/, then
[skills] paths. Shows each skill's scope, how it runs (inline or subagent), whether the model
may discover it (auto) or only /NAME runs it (manual), whether it is repository content of an
untrusted workspace, and every problem found, as file:line.

Flags:
  --json   Print the store as one JSON object
";

pub fn main(mut global: Global, lexer: &mut Lexer) -> Result<i32, Error> {
    let mut json_output = false;
    let mut action: Option<String> = None;
    while let Some(arg) = lexer.next().map_err(Error::Usage)? {
        if global.accept(&arg, lexer)? {
            continue;
        }
        match &arg {
            Arg::Long(name) if name == "json" => json_output = true,
            Arg::Long(name) if name == "help" => return help(),
            Arg::Short('h') => return help(),
            Arg::Value(word) if action.is_none() => action = Some(word.clone()),
            _ => return Err(unknown_flag("skills", &arg)),
        }
    }
    if let Some(other) = action.filter(|a| a != "list") {
        return Err(Error::Usage(format!(
            "unknown `reasonix skills` action `{other}`; use `list`"
        )));
    }
    let (cwd, home, loaded) = global.load_workspace()?;
    let roots = roots(
        &loaded.config,
        &home,
        &cwd,
        skills_trusted(&loaded.config, &cwd),
    );
    let store = store::load(&roots);
    if json_output {
        print_out(&format!("{:#}\n", as_json(&store)));
    } else {
        print_out(&listing(&store));
    }
    Ok(exit::OK)
}

fn help() -> Result<i32, Error> {
    print_out(HELP);
    Ok(exit::OK)
}

fn run_as(skill: &Skill) -> &'static str {
    match skill.run_as {
        RunAs::Inline => "inline",
        RunAs::Subagent => "subagent",
    }
}

fn invocation(skill: &Skill) -> &'static str {
    match skill.invocation {
        Invocation::Auto => "auto",
        Invocation::Manual => "manual",
    }
}

fn listing(store: &Store) -> String {
    let mut out = String::new();
    if store.skills.is_empty() {
        out.push_str("No skills found.\n");
    }
    let width = store
        .skills
        .iter()
        .map(|s| s.name.chars().count())
        .max()
        .unwrap_or(0);
    for skill in &store.skills {
        let mut tags = vec![skill.scope.label(), run_as(skill), invocation(skill)];
        if !skill.trusted {
            tags.push("untrusted workspace");
        }
        out.push_str(&format!(
            "{:width$}  [{}]  {}\n{:width$}  {}\n",
            skill.name,
            tags.join(", "),
            skill.description,
            "",
            skill.dir.join("SKILL.md").display(),
        ));
    }
    if !store.disabled.is_empty() {
        out.push_str(&format!(
            "\nDisabled by [skills] disabled_skills: {}\n",
            store.disabled.join(", ")
        ));
    }
    out.push_str("\nRoots, nearest first:\n");
    for root in &store.roots {
        let state = if root.excluded {
            "excluded by [skills] excluded_paths"
        } else if root.path.is_dir() {
            "present"
        } else {
            "absent"
        };
        out.push_str(&format!(
            "  {:8} {} ({state})\n",
            root.scope.label(),
            root.path.display()
        ));
    }
    if !store.diagnostics.is_empty() {
        out.push_str("\nProblems:\n");
        for diagnostic in &store.diagnostics {
            out.push_str(&format!("  {diagnostic}\n"));
        }
    }
    crate::term::sanitize::sanitize(&out)
}

fn as_json(store: &Store) -> Value {
    let skills: Vec<Value> = store
        .skills
        .iter()
        .map(|s| {
            json!({
                "name": s.name,
                "description": s.description,
                "scope": s.scope.label(),
                "run_as": run_as(s),
                "invocation": invocation(s),
                "trusted": s.trusted,
                "model": s.model,
                "effort": s.effort,
                "allowed_tools": s.allowed_tools,
                "path": s.dir.join("SKILL.md"),
                "references": s.references,
                "has_scripts": s.has_scripts,
            })
        })
        .collect();
    let roots: Vec<Value> = store
        .roots
        .iter()
        .map(|r| json!({"scope": r.scope.label(), "path": r.path, "excluded": r.excluded}))
        .collect();
    let diagnostics: Vec<String> = store.diagnostics.iter().map(|d| d.to_string()).collect();
    json!({
        "skills": skills,
        "disabled": store.disabled,
        "roots": roots,
        "diagnostics": diagnostics,
    })
}
