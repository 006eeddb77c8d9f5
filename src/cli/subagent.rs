//! `reasonix subagent list | try NAME TASK | run NAME TASK`: the subagent profiles this
//! workspace sees (built-in and `runAs: subagent` skills), and a profile run headless. `try`
//! uses the read-only registry; `run` the normal permission and sandbox path. Both take
//! `reasonix run`'s flags and output formats, since they are `run` with the profile's body as
//! the system prompt. `create | edit | delete` are dispatched to `subagent_edit`.

use super::lex::{Arg, Lexer};
use super::run;
use super::subagent_edit::{self, Action};
use super::{print_out, unknown_flag, Global};
use crate::app::ProfileRun;
use crate::cli::error::{exit, Error};
use crate::skill::Skill;

pub const HELP: &str = "\
Usage: reasonix subagent list
       reasonix subagent try NAME [RUN FLAGS] TASK...
       reasonix subagent run NAME [RUN FLAGS] TASK...
       reasonix subagent create NAME [--project | --user] --description TEXT [--model M]
                                [--effort E] [--prompt TEXT | --prompt-file PATH]
       reasonix subagent edit NAME [--project | --user] [--description TEXT] [--model M]
                              [--effort E] [--prompt TEXT | --prompt-file PATH]
       reasonix subagent delete NAME [--project | --user] [--yes]

Subagent profiles are skills with `runAs: subagent`: the SKILL.md body is the child agent's
full system prompt. Built-in profiles: explore (read-only codebase research) and review
(reviews the current uncommitted diff); a skill of the same name replaces one.

  list     Lists the profiles this workspace sees, with their source
  try      Runs TASK with the profile and the read-only tools (no writers, no shell)
  run      Runs TASK with the profile under the normal permission and sandbox path
  create   Writes a new profile: <scope root>/NAME/SKILL.md
  edit     Changes a profile's description, model, effort or prompt
  delete   Removes a profile's folder

try and run accept every `reasonix run` flag (--output-format, --model, --effort,
--permission-mode, --allow, --deny, ...); a --model or --effort given there beats the
profile's frontmatter. `reasonix run \"/NAME ...\"` never starts a profile.

create, edit and delete manage simple profiles: one folder holding only SKILL.md, whose
frontmatter has only name, description, runAs: subagent, invocation: manual (the skill index
leaves the profile out, so the model cannot discover it), model and effort. They refuse,
with the reason, built-in profiles (override them in config, or create one of the same
name), inline skills, profiles without invocation: manual, other frontmatter keys
(allowed-tools, ...) or comment lines, folders with more files (references/, scripts/),
symlinked folders or files, and the read-only roots (~/.agents/skills, .claude/skills,
[skills] paths).

  --project            The workspace's .reasonix/skills/ (repository content). create's
                       default when the workspace is trusted
  --user               <home>/skills/. create's default otherwise; edit and delete
                       without a scope take the profile that wins the name
  --description TEXT   One line saying what the profile is for (required by create)
  --model M            The profile's model; edit --model '' removes it
  --effort E           minimal, low, medium, high, max or xhigh; '' removes it
  --prompt TEXT        The system prompt (the SKILL.md body)
  --prompt-file PATH   The system prompt from a file; - reads stdin
  -y, --yes            delete without asking; required when stdin is not a terminal

Without --prompt or --prompt-file, create reads the prompt from stdin when stdin is not a
terminal, and when stdin and stdout are a terminal opens $VISUAL or $EDITOR (else vi) on the
new SKILL.md. edit without a change flag opens the editor on a terminal and is an error
elsewhere; neither waits for an editor or a terminal in a script. Every write is atomic.
Refusals exit with status 2.
";

pub fn main(mut global: Global, lexer: &mut Lexer) -> Result<i32, Error> {
    let mut words: Vec<String> = Vec::new();
    while words.len() < 2 {
        let Some(arg) = lexer.next().map_err(Error::Usage)? else {
            break;
        };
        if global.accept(&arg, lexer)? {
            continue;
        }
        match &arg {
            Arg::Long(name) if name == "help" => return help(),
            Arg::Short('h') => return help(),
            Arg::Value(word) => {
                words.push(word.clone());
                if matches!(words[0].as_str(), "list" | "create" | "edit" | "delete") {
                    break;
                }
            }
            _ => return Err(unknown_flag("subagent", &arg)),
        }
    }
    let action = words.first().map(String::as_str);
    let read_only = match action {
        Some("list") => return list(global, lexer),
        Some("create") => return subagent_edit::main(Action::Create, global, lexer),
        Some("edit") => return subagent_edit::main(Action::Edit, global, lexer),
        Some("delete") => return subagent_edit::main(Action::Delete, global, lexer),
        Some("try") => true,
        Some("run") => false,
        None => return help(),
        Some(other) => {
            return Err(Error::Usage(format!(
                "unknown `reasonix subagent` action `{other}`; use list, try, run, create, edit or delete"
            )))
        }
    };
    let Some(name) = words.get(1).cloned() else {
        return Err(Error::Usage(format!(
            "`reasonix subagent {}` needs a profile NAME and a TASK",
            action.unwrap_or_default()
        )));
    };
    run::profile_main(global, lexer, ProfileRun { name, read_only })
}

fn help() -> Result<i32, Error> {
    print_out(HELP);
    Ok(exit::OK)
}

fn list(mut global: Global, lexer: &mut Lexer) -> Result<i32, Error> {
    while let Some(arg) = lexer.next().map_err(Error::Usage)? {
        if !global.accept(&arg, lexer)? {
            return Err(unknown_flag("subagent", &arg));
        }
    }
    let (cwd, _, loaded) = global.load_workspace()?;
    let store = crate::app::skills::session_store(&loaded.config, &cwd);
    print_out(&listing(&crate::app::skills::profiles(&store.skills)));
    Ok(exit::OK)
}

fn listing(profiles: &[Skill]) -> String {
    if profiles.is_empty() {
        return "No subagent profiles.\n".into();
    }
    let width = profiles.iter().map(|p| p.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for profile in profiles {
        let mut tags = vec![profile.scope.label().to_string()];
        if crate::skill::builtin::is_read_only(profile) {
            tags.push("read-only".into());
        }
        if let Some(model) = &profile.model {
            tags.push(format!("model {model}"));
        }
        out.push_str(&format!(
            "{:width$}  [{}]  {}\n",
            profile.name,
            tags.join(", "),
            profile.description
        ));
    }
    out
}
