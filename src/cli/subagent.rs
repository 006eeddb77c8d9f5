//! `reasonix subagent list | try NAME TASK | run NAME TASK`: the subagent profiles this
//! workspace sees (built-in and `runAs: subagent` skills), and a profile run headless. `try`
//! uses the read-only registry; `run` the normal permission and sandbox path. Both take
//! `reasonix run`'s flags and output formats, since they are `run` with the profile's body as
//! the system prompt.

use super::lex::{Arg, Lexer};
use super::run::{self, ProfileRun};
use super::{print_out, unknown_flag, Global};
use crate::cli::error::{exit, Error};
use crate::skill::{RunAs, Skill};

pub const HELP: &str = "\
Usage: reasonix subagent list
       reasonix subagent try NAME [RUN FLAGS] TASK...
       reasonix subagent run NAME [RUN FLAGS] TASK...

Subagent profiles are skills with `runAs: subagent`: the SKILL.md body is the child agent's
full system prompt. Built-in profiles: explore (read-only codebase research) and review
(reviews the current uncommitted diff); a skill of the same name replaces one.

  list   Lists the profiles this workspace sees, with their source
  try    Runs TASK with the profile and the read-only tools (no writers, no shell)
  run    Runs TASK with the profile under the normal permission and sandbox path

try and run accept every `reasonix run` flag (--output-format, --model, --effort,
--permission-mode, --allow, --deny, ...); a --model or --effort given there beats the
profile's frontmatter. `reasonix run \"/NAME ...\"` never starts a profile.
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
                if words[0] == "list" {
                    break;
                }
            }
            _ => return Err(unknown_flag("subagent", &arg)),
        }
    }
    let action = words.first().map(String::as_str);
    let read_only = match action {
        Some("list") => return list(global, lexer),
        Some("try") => true,
        Some("run") => false,
        None => return help(),
        Some(other) => {
            return Err(Error::Usage(format!(
                "unknown `reasonix subagent` action `{other}`; use list, try or run"
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
    let store = crate::cli::skills::session_store(&loaded.config, &cwd);
    print_out(&listing(&profiles(&store.skills)));
    Ok(exit::OK)
}

/// The stored subagent skills, then each built-in no stored skill shadows, by name.
pub fn profiles(stored: &[Skill]) -> Vec<Skill> {
    let mut all: Vec<Skill> = stored
        .iter()
        .filter(|s| s.run_as == RunAs::Subagent)
        .cloned()
        .collect();
    for builtin in crate::skill::builtin::profiles() {
        if !stored.iter().any(|s| s.name == builtin.name) {
            all.push(builtin);
        }
    }
    all.sort_by(|a, b| a.name.cmp(&b.name));
    all
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
