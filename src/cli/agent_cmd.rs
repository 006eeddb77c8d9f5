//! `reasonix agent list | show | create | edit | delete | export | import | default`: the
//! agent composition catalog from the command line, and the chat's `/agent` and `/persona`.
//! The binding step every front end shares is `app::binding`'s.

use std::path::Path;

use super::lex::{Arg, Lexer};
use super::{print_out, unknown_flag, Global};
use crate::app::binding::available;
use crate::app::catalog_table::render_list;
use crate::cli::error::{exit, Error};
use crate::composition::resolve;
use crate::composition::store::{self, Catalog};
use crate::composition::{Code, CompositionError, Definition, Id, Scope, Selection};
use crate::config::Config;
use crate::term::sanitize::sanitize;

pub const HELP: &str = "\
Usage: reasonix agent list
       reasonix agent show ID
       reasonix agent create ID [--from ID | --file FILE] [DEFINITION FLAGS]
       reasonix agent edit ID [--revision N] [DEFINITION FLAGS]
       reasonix agent delete ID [--revision N]
       reasonix agent export ID
       reasonix agent import FILE [--as ID]
       reasonix agent default [ID]

Agent compositions bind a persona and a selection of tools, skills, MCP servers, hooks and
commands to a conversation (`reasonix --agent-composition ID`, `reasonix run
--agent-composition ID`). IDs are builtin:NAME (shipped, read-only: builtin:general,
builtin:minimal), user:NAME (<home>/agent-presets/definitions/NAME.json) and project:NAME
(.reasonix/agent-presets/definitions/NAME.json in the workspace, untrusted repository files).

  list      The catalog with sources, revisions and capabilities; the default is marked
  show      A definition with its revision, as JSON
  create    A new user: or project: definition (revision 1)
  edit      Changes a definition; --revision N refuses the save if it is no longer N
  delete    Removes a definition; bound conversations keep their binding
  export    Portable JSON (credentials stay ${NAME} references)
  import    Previews a definition file with its diagnostics; --as ID saves it. Never starts
            a program and never records an authorisation
  default   Shows, or sets, the composition `--agent-composition default` chooses (a
            project:NAME default holds for the current workspace only)

Definition flags:
  --name TEXT             The display name
  --description TEXT      One line on what it is for
  --persona-prefix TEXT   Text put before the system prompt
  --persona-suffix TEXT   Text put after the system prompt
  --tools LIST            Tools: `inherit`, or comma-separated IDs (empty disables)
  --skills LIST           Skills, the same way
  --mcp-servers LIST      MCP servers, the same way
  --hooks LIST            Hooks, the same way (the safety hooks always stay)
  --commands LIST         Custom commands, the same way
  --file FILE             The whole definition as JSON (`-` reads stdin)
  --from ID               Start from a copy of another entry (e.g. builtin:minimal)

Refusals print `agent_composition.CODE: message` and exit with status 6 (codes: invalid,
not_found, read_only, conflict, locked, unavailable).
";

pub fn main(mut global: Global, lexer: &mut Lexer) -> Result<i32, Error> {
    let mut words: Vec<String> = Vec::new();
    let mut flags = Flags::default();
    while let Some(arg) = lexer.next().map_err(Error::Usage)? {
        if global.accept(&arg, lexer)? {
            continue;
        }
        match &arg {
            Arg::Value(word) => words.push(word.clone()),
            _ if flags.accept(&arg, lexer)? => {}
            _ => return Err(unknown_flag("agent", &arg)),
        }
    }
    let (cwd, home, loaded) = global.load_workspace()?;
    let catalog = Catalog::new(&home, &cwd);
    let word = |i: usize, what: &str| {
        words
            .get(i)
            .cloned()
            .ok_or_else(|| Error::Usage(format!("`reasonix agent {}` needs {what}", words[0])))
    };
    let Some(action) = words.first().cloned() else {
        print_out(HELP);
        return Ok(exit::OK);
    };
    match action.as_str() {
        "list" => list(&catalog),
        "show" => {
            let id = Id::parse(&word(1, "an ID")?)?;
            let definition = catalog.get(&id)?;
            print_out(&format!("# {id}\n{}", json(&definition)));
            Ok(exit::OK)
        }
        "create" => {
            let id = Id::parse(&word(1, "an ID")?)?;
            let base = match (&flags.from, &flags.file) {
                (Some(from), _) => catalog.get(&Id::parse(from)?)?,
                (None, Some(file)) => crate::composition::parse(&read_file(file)?)?,
                (None, None) => Definition {
                    schema_version: crate::composition::SCHEMA_VERSION,
                    ..Definition::default()
                },
            };
            let definition = flags.apply(base);
            let saved = catalog.save(&id, definition, None)?;
            print_out(&format!("created {id} (revision {})\n", saved.revision));
            Ok(exit::OK)
        }
        "edit" => {
            let id = Id::parse(&word(1, "an ID")?)?;
            let current = catalog.get(&id)?;
            if id.scope == Scope::Builtin {
                return Err(CompositionError::new(
                    Code::ReadOnly,
                    format!("{id} is a shipped template; `reasonix agent create user:NAME --from {id}` copies it"),
                )
                .into());
            }
            let expected = flags.revision.unwrap_or(current.revision);
            let base = match &flags.file {
                Some(file) => crate::composition::parse(&read_file(file)?)?,
                None => current,
            };
            let saved = catalog.save(&id, flags.apply(base), Some(expected))?;
            print_out(&format!("saved {id} (revision {})\n", saved.revision));
            Ok(exit::OK)
        }
        "delete" => {
            let id = Id::parse(&word(1, "an ID")?)?;
            catalog.delete(&id, flags.revision)?;
            print_out(&format!("deleted {id}\n"));
            Ok(exit::OK)
        }
        "export" => {
            let id = Id::parse(&word(1, "an ID")?)?;
            print_out(&inert_json(&store::export(&catalog.get(&id)?)));
            Ok(exit::OK)
        }
        "import" => {
            let text = read_file(&word(1, "a FILE")?)?;
            let scope = match &flags.save_as {
                Some(id) => Id::parse(id)?.scope,
                None => Scope::User,
            };
            let available = available(&loaded.config, &cwd);
            let (definition, diagnostics) = store::preview(&text, scope, &available)?;
            for line in &diagnostics {
                print_out(&format!("diagnostic: {}\n", sanitize(line)));
            }
            match &flags.save_as {
                None => {
                    print_out(&format!(
                        "preview only ({} diagnostic(s)); add --as user:NAME to save it\n{}",
                        diagnostics.len(),
                        json(&definition)
                    ));
                }
                Some(id) => {
                    let id = Id::parse(id)?;
                    let saved = catalog.save(&id, definition, None)?;
                    print_out(&format!("imported {id} (revision {})\n", saved.revision));
                }
            }
            Ok(exit::OK)
        }
        "default" => match words.get(1) {
            None => {
                let shown = catalog
                    .default_id()
                    .unwrap_or_else(|| "builtin:general (nothing saved)".into());
                print_out(&format!("{shown}\n"));
                Ok(exit::OK)
            }
            Some(text) => {
                let id = Id::parse(text)?;
                catalog.set_default(&id)?;
                print_out(&format!("default: {id}\n"));
                Ok(exit::OK)
            }
        },
        other => Err(Error::Usage(format!(
            "unknown action `{other}`; use list, show, create, edit, delete, export, import or default"
        ))),
    }
}

fn json(definition: &Definition) -> String {
    inert_json(&(serde_json::to_string_pretty(definition).unwrap_or_default() + "\n"))
}

/// JSON for the terminal: a definition's strings are repository or user text, and serde
/// escapes only the C0 controls, so DEL, the C1 controls (a lone 0x9B starts a CSI sequence)
/// and the bidirectional overrides are written as `\uXXXX` escapes too: the same JSON
/// value, inert on a terminal. Outside strings JSON text is ASCII, so only strings change.
fn inert_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\u{7f}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            _ => out.push(c),
        }
    }
    out
}

fn read_file(path: &str) -> Result<String, Error> {
    if path == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .map_err(|e| Error::io("reading the definition from stdin", e))?;
        return Ok(text);
    }
    std::fs::read_to_string(path).map_err(|e| Error::io(format!("reading {path}"), e))
}

/// The catalog as a table: ID, source, revision, capabilities, name.
fn list(catalog: &Catalog) -> Result<i32, Error> {
    let (entries, problems) = catalog.list();
    let default = catalog.default_id();
    print_out(&render_list(&entries, default.as_deref()));
    for problem in problems {
        eprintln!("reasonix: warning: {}", sanitize(&problem));
    }
    Ok(exit::OK)
}

#[derive(Debug, Default)]
struct Flags {
    name: Option<String>,
    description: Option<String>,
    prefix: Option<String>,
    suffix: Option<String>,
    tools: Option<Selection>,
    skills: Option<Selection>,
    mcp_servers: Option<Selection>,
    hooks: Option<Selection>,
    commands: Option<Selection>,
    file: Option<String>,
    from: Option<String>,
    revision: Option<u64>,
    save_as: Option<String>,
}

fn selection(text: &str) -> Selection {
    if text.trim() == "inherit" {
        return Selection::Inherit;
    }
    Selection::Only(
        text.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
    )
}

impl Flags {
    fn accept(&mut self, arg: &Arg, lexer: &mut Lexer) -> Result<bool, Error> {
        let Arg::Long(name) = arg else {
            return Ok(false);
        };
        let flag = arg.shown();
        let mut value = || lexer.value(&flag).map_err(Error::Usage);
        match name.as_str() {
            "name" => self.name = Some(value()?),
            "description" => self.description = Some(value()?),
            "persona-prefix" => self.prefix = Some(value()?),
            "persona-suffix" => self.suffix = Some(value()?),
            "tools" => self.tools = Some(selection(&value()?)),
            "skills" => self.skills = Some(selection(&value()?)),
            "mcp-servers" => self.mcp_servers = Some(selection(&value()?)),
            "hooks" => self.hooks = Some(selection(&value()?)),
            "commands" => self.commands = Some(selection(&value()?)),
            "file" => self.file = Some(value()?),
            "from" => self.from = Some(value()?),
            "as" => self.save_as = Some(value()?),
            "revision" => {
                let text = value()?;
                self.revision = Some(text.parse().map_err(|_| {
                    Error::Usage(format!("--revision needs a whole number, got `{text}`"))
                })?);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn apply(&self, mut d: Definition) -> Definition {
        let set = |slot: &mut String, v: &Option<String>| {
            if let Some(v) = v {
                *slot = v.clone();
            }
        };
        set(&mut d.name, &self.name);
        set(&mut d.description, &self.description);
        set(&mut d.persona.prefix, &self.prefix);
        set(&mut d.persona.suffix, &self.suffix);
        let m = &mut d.modules;
        for (slot, v) in [
            (&mut m.tools, &self.tools),
            (&mut m.skills, &self.skills),
            (&mut m.mcp_servers, &self.mcp_servers),
            (&mut m.hooks, &self.hooks),
            (&mut m.commands, &self.commands),
        ] {
            if let Some(v) = v {
                *slot = v.clone();
            }
        }
        d
    }
}

/// What `/agent [ID]` asks of the chat.
#[derive(Debug, PartialEq, Eq)]
pub enum SlashAgent {
    /// Text to show: the catalog, or that nothing changes.
    Text(String),
    /// Rebuild the blank chat for this composition (`builtin:general`: no binding).
    Switch(String),
}

/// `/agent [ID]` in the chat: the catalog with sources and capabilities, or a choice checked
/// against the catalog; a blank chat switches to it. After the first prompt the binding is
/// locked.
pub fn slash_agent(
    config: &Config,
    cwd: &Path,
    bound: Option<&str>,
    args: &str,
    blank: bool,
) -> Result<SlashAgent, String> {
    let catalog = Catalog::new(&config.home, cwd);
    let current = bound.unwrap_or("builtin:general");
    let wanted = args.trim();
    if wanted.is_empty() {
        let (entries, problems) = catalog.list();
        let mut text = format!("bound: {current}\n");
        text.push_str(&render_list(&entries, catalog.default_id().as_deref()));
        for problem in problems {
            text.push_str(&format!("problem: {}\n", sanitize(&problem)));
        }
        text.push_str("(* = your default; `/agent ID` chooses before the first prompt)\n");
        return Ok(SlashAgent::Text(text));
    }
    let chosen = resolve::choose(&catalog, wanted)
        .map_err(|e| e.to_string())?
        .map_or_else(|| "builtin:general".to_string(), |(id, _)| id.to_string());
    if chosen == current {
        return Ok(SlashAgent::Text(format!(
            "this conversation already uses {current}"
        )));
    }
    if !blank {
        return Err(CompositionError::new(
            Code::Locked,
            format!(
                "cannot switch to {chosen}: this conversation is bound to {current} since its \
                 first prompt (clearing or rewinding keeps that); /new starts a blank \
                 conversation where `/agent ID` chooses again"
            ),
        )
        .to_string());
    }
    Ok(SlashAgent::Switch(chosen))
}

/// `/persona [prefix TEXT | suffix TEXT | clear]`: the user-config persona builtin:general
/// uses, edited in `<home>/config.toml`; the next conversation reads it.
pub fn slash_persona(config: &Config, args: &str) -> Result<String, String> {
    let path = crate::config::paths::config_file(&config.home);
    let args = args.trim();
    let (word, rest) = args.split_once(' ').unwrap_or((args, ""));
    let set = |key: &str, value: Option<&str>| {
        crate::config::edit::set_agent_string(&path, key, value).map_err(|e| e.to_string())
    };
    match word {
        "" => {
            let shown = |v: &Option<String>| v.clone().unwrap_or_else(|| "(none)".into());
            Ok(format!(
                "persona_prefix: {}\npersona_suffix: {}\n(user config {}; `/persona prefix TEXT`, \
                 `/persona suffix TEXT`, `/persona clear`)",
                shown(&config.agent.persona_prefix),
                shown(&config.agent.persona_suffix),
                path.display()
            ))
        }
        "prefix" | "suffix" => {
            let key = format!("persona_{word}");
            let value = rest.trim();
            set(&key, (!value.is_empty()).then_some(value))?;
            Ok(format!(
                "saved [agent] {key} in {}; new conversations use it",
                path.display()
            ))
        }
        "clear" => {
            set("persona_prefix", None)?;
            set("persona_suffix", None)?;
            Ok(format!("removed the persona from {}", path.display()))
        }
        other => Err(format!(
            "unknown /persona action `{other}`; use prefix TEXT, suffix TEXT or clear"
        )),
    }
}
