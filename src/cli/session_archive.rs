//! `reasonix session export ID` and `reasonix session import FILE`: the subcommand over the
//! `reasonix-native-session` envelope of `app::session_archive` (its one decoder, its limits,
//! its refusal codes). A refusal is one line on stderr, its stable code first, and exits with
//! the refusal's own status. Importing writes a new session file in this workspace and
//! nothing else; the imported session is resumed with `--resume ID` like any other.

use std::path::Path;

use super::lex::{Arg, Lexer};
use super::{print_out, unknown_flag, Global};
use crate::agent::session;
use crate::app::session_archive::{
    decode, encode, imported_history, install_resources, read_archive, save, Decoded,
};
use crate::cli::error::{exit, Error};
use crate::config;

pub const HELP: &str = "\
Usage: reasonix session export ID > FILE.json
       reasonix session import FILE.json

Moves a saved conversation between machines or workspaces as one JSON file (the
reasonix-native-session version 2 envelope: header, messages, composition binding, retained
resources; never a key).

  export ID     Writes session ID (an id, a unique prefix or a path, as --resume takes) to
                stdout
  import FILE   Checks FILE and saves it as a new session of this workspace, then prints
                its id; continue it with `reasonix --resume ID`. Import trusts nothing and
                starts nothing: a bound session continues only where this machine has its
                composition (with the same MCP launch parameters); elsewhere it is history

A bound conversation's retained skill files travel with it and are written into this home
on import, after they are checked against the binding's sha256 list.

An archive is refused, with one line naming the code first, when it is malformed
(session.archive_invalid, exit 10: also retained files that do not match the binding's
digests, a path outside the bundle or a credential file's name), of another version
(session.archive_unsupported, exit 11), or over the limits (session.archive_too_large,
exit 12): 192 MiB in all, 250000 messages, 64 MiB for one message, 1 MiB for one retained
file and 16 MiB for all of them.
";

pub fn main(mut global: Global, lexer: &mut Lexer) -> Result<i32, Error> {
    let mut words: Vec<String> = Vec::new();
    while let Some(arg) = lexer.next().map_err(Error::Usage)? {
        if global.accept(&arg, lexer)? {
            continue;
        }
        match arg {
            Arg::Long(name) if name == "help" => return help(),
            Arg::Short('h') => return help(),
            Arg::Value(word) => words.push(word),
            other => return Err(unknown_flag("session", &other)),
        }
    }
    match words.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["export", reference] => export(&global, reference),
        ["import", file] => import(&global, Path::new(file)),
        [] => Err(Error::Usage(
            "`reasonix session` needs `export ID` or `import FILE`".into(),
        )),
        _ => Err(Error::Usage(format!(
            "unknown `reasonix session {}`; try `export ID` or `import FILE`",
            words.join(" ")
        ))),
    }
}

fn help() -> Result<i32, Error> {
    print_out(HELP);
    Ok(exit::OK)
}

fn export(global: &Global, reference: &str) -> Result<i32, Error> {
    let (cwd, _, loaded) = global.load_workspace()?;
    let path = crate::app::assemble::find_session(reference, &loaded.config, &cwd)?;
    let (header, messages) = session::load(&path)?;
    let text = encode(&loaded.config.home, &header, &messages).map_err(unexportable)?;
    print_out(&text);
    Ok(exit::OK)
}

fn import(global: &Global, file: &Path) -> Result<i32, Error> {
    let (cwd, _, loaded) = global.load_workspace()?;
    let decoded = match read_archive(file) {
        Ok(bytes) => decode(&bytes),
        Err(refusal) => Err(refusal),
    };
    let decoded = match decoded {
        Ok(decoded) => decoded,
        Err(refusal) => {
            // One line, the stable code first; the detail may quote the file.
            eprintln!("{}", crate::term::sanitize::sanitize(&refusal.to_string()));
            return Ok(refusal.exit_code());
        }
    };
    let dir = config::paths::sessions_dir(&loaded.config.home, &cwd);
    // The archive's retained skills are read by the prompt built next.
    install_resources(&loaded.config.home, &decoded)?;
    // Today's prompt, with the persona of the binding when there is one (it continues only
    // where this machine's catalog has that composition, so the persona is the local one).
    let mut config = loaded.config.clone();
    if let Some(binding) = &decoded.header.composition {
        crate::composition::resolve::apply(binding, &mut config, &[]);
    }
    let system = crate::app::assemble::system_prompt(
        &crate::app::assemble::PromptFlags::default(),
        &config,
        &cwd,
    )?;
    let decoded = Decoded {
        messages: imported_history(system, decoded.messages),
        ..decoded
    };
    let id = save(decoded, &loaded.config.home, &dir, &cwd)?;
    print_out(&format!(
        "imported session {id}; continue it with `reasonix --resume {id}`\n"
    ));
    Ok(exit::OK)
}

/// A bound conversation whose retained bundle is missing or changed is not exported without
/// it: the archive would not be the conversation.
fn unexportable(detail: String) -> Error {
    crate::app::Error::Composition(crate::composition::CompositionError::new(
        crate::composition::Code::Unavailable,
        detail,
    ))
    .into()
}
