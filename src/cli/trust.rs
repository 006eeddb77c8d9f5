//! `reasonix trust`: trust the workspace so its project files may loosen the user's settings
//! and run (its `./reasonix.toml`, the hooks of `.claude/settings.json`, its skills, commands
//! and `.env`), showing which bound files changed since the last trust; list the trusted
//! workspaces, or revoke one. The list and the bound files are `config::trust`.

use std::path::PathBuf;

use super::lex::{Arg, Lexer};
use super::{print_out, unknown_flag, Global};
use crate::app::assemble;
use crate::cli::error::{exit, Error};
use crate::config::{self, trust::TrustStore, LoadOptions};

pub const HELP: &str = "\
Usage: reasonix trust [--revoke] [DIR]
       reasonix trust --list

Trusts the workspace (the current directory, or DIR) so that its project files may loosen
your own settings and run. Until then ./reasonix.toml may only tighten them: allow rules, a
[permissions] mode wider than yours, [[providers]] entries, a default_model that is not one
of your providers, a longer [tools] enabled list and a system_prompt_file outside the
workspace are ignored, each with a warning. Deny and ask rules, a narrower mode and
[sandbox] forbid_read always apply. The hooks of .claude/settings.json do not run, the
repository's skills are not offered to the model, its custom commands do not replace yours
and its .env fills no MCP entry. MCP servers declared by the project still need their own
launch grant.

Trust is bound to the files as they are now: reasonix.toml, .claude/settings.json,
.claude/settings.local.json, .mcp.json, .env, .reasonix/commands/, .reasonix/skills/,
.claude/skills/, .claude/agents/ and .reasonix/agent-presets/. A file that changes later (a pull, or a model
writing in the workspace) counts as untrusted on its own, with one warning naming it, until
you review it and run `reasonix trust` again, which lists what changed. A subdirectory is a
separate workspace. `--trust-project` on `run` and `chat` believes ./reasonix.toml for one
run without storing.

Flags:
      --list     Print the trusted workspaces, one per line
      --revoke   Stop trusting the workspace
";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Trust,
    Revoke,
    List,
}

fn parse(
    mut global: Global,
    lexer: &mut Lexer,
) -> Result<(Global, Action, Option<PathBuf>), Error> {
    let mut action = Action::Trust;
    let mut dir = None;
    while let Some(arg) = lexer.next().map_err(Error::Usage)? {
        if global.accept(&arg, lexer)? {
            continue;
        }
        let next = match arg {
            Arg::Long(ref n) if n == "list" => Action::List,
            Arg::Long(ref n) if n == "revoke" => Action::Revoke,
            Arg::Value(value) if dir.is_none() => {
                dir = Some(PathBuf::from(value));
                continue;
            }
            other => return Err(unknown_flag("trust", &other)),
        };
        if action != Action::Trust && action != next {
            return Err(Error::Usage(
                "`reasonix trust` takes one of --list and --revoke".into(),
            ));
        }
        action = next;
    }
    if action == Action::List && dir.is_some() {
        return Err(Error::Usage(
            "`reasonix trust --list` takes no directory".into(),
        ));
    }
    Ok((global, action, dir))
}

pub fn main(global: Global, lexer: &mut Lexer) -> Result<i32, Error> {
    let (global, action, dir) = parse(global, lexer)?;
    global.enter_dir()?;
    let cwd = assemble::working_dir()?;
    let workspace = match &dir {
        Some(dir) => cwd.join(dir),
        None => cwd.clone(),
    };
    let options = LoadOptions::from_env(workspace.clone(), global.config.clone())?;
    let store = TrustStore::new(&options.home);
    match action {
        Action::List => {
            let text: String = store
                .list()?
                .iter()
                .map(|w| format!("{}\n", w.path))
                .collect();
            print_out(&text);
        }
        Action::Revoke => {
            let shown = config::trust::identity(&workspace);
            if store.revoke(&workspace)? {
                print_out(&format!(
                    "{shown}: no longer trusted; its reasonix.toml may only tighten your settings\n"
                ));
            } else {
                print_out(&format!("{shown} was not trusted\n"));
            }
        }
        Action::Trust => trust(&store, &options)?,
    }
    Ok(exit::OK)
}

/// Trusts the workspace and says what its project file now changes.
fn trust(store: &TrustStore, options: &LoadOptions) -> Result<(), Error> {
    let workspace = &options.cwd;
    if !workspace.is_dir() {
        return Err(Error::Usage(format!(
            "{} is not a directory",
            workspace.display()
        )));
    }
    // What was ignored until now; a config that does not load is reported by the commands
    // that use it, not here.
    let ignored = config::load(options)
        .map(|loaded| loaded.untrusted)
        .unwrap_or_default();
    let shown = config::trust::identity(workspace);
    let review = store.review(workspace);
    if !store.trust(workspace)? {
        print_out(&format!("{shown} is already trusted\n"));
        return Ok(());
    }
    let effect = if ignored.is_empty() {
        String::new()
    } else {
        format!(
            "; now in effect from its reasonix.toml: {}",
            ignored.join(", ")
        )
    };
    let changed = if review.changed.is_empty() {
        String::new()
    } else {
        format!(
            "Changed since you trusted it, now trusted as they are: {}\n",
            review.changed_paths()
        )
    };
    print_out(&format!(
        "{shown}: trusted{effect}\n{changed}Undo with `reasonix trust --revoke`.\n"
    ));
    Ok(())
}
