//! `reasonix skills list`: the skill store as this workspace sees it: each skill with its
//! scope, how it runs and where it lives, the roots searched, and every diagnostic (malformed
//! files with `file:line`, shadowed names, hidden skills). Also builds the store's roots from
//! configuration for the other commands.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{json, Value};

use super::lex::{Arg, Lexer};
use super::{print_out, unknown_flag, Global};
use crate::cli::error::{exit, Error};
use crate::command::custom;
use crate::config::{self, Config};
use crate::skill::store::{self, Roots, Store};
use crate::skill::{Invocation, RunAs, Scope, Skill};

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

/// A workspace and whether it was trusted when its skills were read.
type StoreKey = (PathBuf, bool);

/// The store a session uses, with the workspace's trust as the trust list records it. It is
/// read once per process (and trust standing): the system prompt's index, the `skill` tool,
/// the chat's commands and the subagent profiles see the same skills, and start-up reads the
/// roots once. A skill added later appears in the next run or chat.
pub fn session_store(config: &Config, workspace: &Path) -> Arc<Store> {
    static STORES: Mutex<Vec<(StoreKey, Arc<Store>)>> = Mutex::new(Vec::new());
    let trusted = skills_trusted(config, workspace);
    let key = (workspace.to_path_buf(), trusted);
    let mut stores = STORES.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, store)) = stores.iter().find(|(k, _)| *k == key) {
        return Arc::clone(store);
    }
    let store = Arc::new(store::load(&roots(
        config,
        &config.home,
        workspace,
        trusted,
    )));
    stores.push((key, Arc::clone(&store)));
    store
}

/// Each inline skill as a `/<name>` command whose text loads the skill with the typed
/// arguments, and each subagent profile (stored or built-in) as one whose text has the model
/// hand the typed task to that profile through `task`. The profile's name is in the user's
/// turn only, never in a schema or the system prompt. A custom command of the same name wins
/// (it is the user's explicit file), with a notice.
pub fn add_commands(commands: &mut custom::Loaded, store: &Store) {
    let profiles = crate::cli::subagent::profiles(&store.skills);
    let inline = store.skills.iter().filter(|s| s.run_as == RunAs::Inline);
    for skill in inline.chain(profiles.iter()) {
        // An untrusted project command does not hide a skill the user installed (the
        // shipped profiles rank below any file, as before).
        let installed = !skill.scope.is_repository() && skill.scope != Scope::Builtin;
        if installed && commands.untrusted.contains(&skill.name) {
            commands.commands.retain(|c| c.name != skill.name);
            commands.untrusted.retain(|n| *n != skill.name);
            commands.notices.push(format!(
                "the project's /{name} is ignored: your skill `{name}` wins while \
                 .reasonix/commands is not trusted (`reasonix trust`)",
                name = skill.name
            ));
        }
        if commands.commands.iter().any(|c| c.name == skill.name) {
            commands.notices.push(format!(
                "skill `{}` has no /{} command: a custom command of that name comes first",
                skill.name, skill.name
            ));
            continue;
        }
        let (description, body) = match skill.run_as {
            RunAs::Inline => (
                format!("skill: {}", skill.description),
                crate::tool::builtin::skill::render(skill, "$ARGUMENTS"),
            ),
            RunAs::Subagent => (
                format!("subagent: {}", skill.description),
                format!(
                    "Hand this task to the `{name}` subagent: call the `task` tool with \
                     `profile` set to \"{name}\" and the task below as its `prompt`, then \
                     report its answer.\n\nTask: $ARGUMENTS",
                    name = skill.name
                ),
            ),
        };
        commands.commands.push(custom::CustomCommand {
            name: skill.name.clone(),
            description,
            argument_hint: String::new(),
            body,
            path: skill.dir.join("SKILL.md"),
        });
    }
    commands.commands.sort_by(|a, b| a.name.cmp(&b.name));
}

/// Whether the workspace's skill folders are trusted as they are now: both, since a changed
/// one may shadow a skill of the other.
pub fn skills_trusted(config: &Config, workspace: &Path) -> bool {
    let store = config::trust::TrustStore::for_session(config);
    [
        config::trust::Bound::Skills,
        config::trust::Bound::ClaudeSkills,
    ]
    .into_iter()
    .all(|bound| store.covers(workspace, bound))
}

/// Where the store looks, from `[skills]`, the home and the workspace's trust.
pub fn roots(config: &Config, home: &Path, workspace: &Path, trusted: bool) -> Roots {
    Roots {
        workspace: workspace.to_path_buf(),
        home: Some(home.to_path_buf()),
        user_home: std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(Into::into),
        paths: config.skills.paths.clone(),
        excluded_paths: config.skills.excluded_paths.clone(),
        disabled: config.skills.disabled_skills.clone(),
        workspace_trusted: trusted,
        claude_skills: config::claude::user_path(config, workspace, "skills"),
        claude_agents: config::claude::user_path(config, workspace, "agents"),
    }
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
