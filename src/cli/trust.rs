//! `reasonix trust`: trust the workspace so its `./reasonix.toml` may loosen the user's settings
//! (allow rules, a wider permission mode, its own providers and model), list the trusted
//! workspaces, or revoke one. The list itself is `config::trust`.

use std::path::PathBuf;

use super::assemble;
use super::lex::{Arg, Lexer};
use super::{print_out, unknown_flag, Global};
use crate::cli::error::{exit, Error};
use crate::config::{self, trust::TrustStore, LoadOptions};

pub const HELP: &str = "\
Usage: reasonix trust [--revoke] [DIR]
       reasonix trust --list

Trusts the workspace (the current directory, or DIR) so that its ./reasonix.toml may loosen
your own settings. Until then a project file may only tighten them: allow rules, a
[permissions] mode wider than yours, [[providers]] entries, a default_model that is not one
of your providers, a longer [tools] enabled list and a system_prompt_file outside the
workspace are ignored, each with a warning. Deny and ask rules, a narrower mode and
[sandbox] forbid_read always apply. MCP servers declared by the project still need their own
launch grant.

Trust belongs to the directory (its canonical path), not to the file's content: later edits
of a trusted project's reasonix.toml apply without asking again. A subdirectory is a
separate workspace. `--trust-project` on `run` and `chat` trusts for one run without storing.

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
    print_out(&format!(
        "{shown}: trusted{effect}\nUndo with `reasonix trust --revoke`.\n"
    ));
    Ok(())
}
