//! `reasonix tools`: lists the built-in tools, or prints their contract (Markdown) or their
//! canonical schemas (JSON). Shows every built-in, whatever `[tools] enabled` says.

use super::lex::{Arg, Lexer};
use super::{print_out, unknown_flag, Global};
use crate::cli::error::{exit, Error};
use crate::tool::{contract, Registry};

pub const HELP: &str = "\
Usage: reasonix tools [--markdown | --json]

Lists the built-in tools: name, read-only or writer, and what each does.

Flags:
  --markdown   Print the tool contract (the content of docs/TOOL_CONTRACT.md)
  --json       Print the canonical tool schemas as a JSON array
";

enum Format {
    List,
    Markdown,
    Json,
}

pub fn main(mut global: Global, lexer: &mut Lexer) -> Result<i32, Error> {
    let mut format = Format::List;
    let mut chosen: Option<&'static str> = None;
    while let Some(arg) = lexer.next().map_err(Error::Usage)? {
        if global.accept(&arg, lexer)? {
            continue;
        }
        let (next, flag) = match &arg {
            Arg::Long(name) if name == "markdown" => (Format::Markdown, "--markdown"),
            Arg::Long(name) if name == "json" => (Format::Json, "--json"),
            Arg::Long(name) if name == "help" => return show_help(),
            Arg::Short('h') => return show_help(),
            _ => return Err(unknown_flag("tools", &arg)),
        };
        if let Some(previous) = chosen.filter(|p| *p != flag) {
            return Err(Error::Usage(format!(
                "`{previous}` and `{flag}` cannot be combined; choose one output format"
            )));
        }
        chosen = Some(flag);
        format = next;
    }
    let registry = crate::agent::offered::every_tool();
    let text = match format {
        Format::List => listing(&registry),
        Format::Markdown => contract::markdown(&registry),
        Format::Json => {
            let json = serde_json::to_string_pretty(&registry.schemas())
                .map_err(|e| Error::Failed(format!("cannot encode the tool schemas: {e}")))?;
            format!("{json}\n")
        }
    };
    print_out(&text);
    Ok(exit::OK)
}

fn show_help() -> Result<i32, Error> {
    print_out(HELP);
    Ok(exit::OK)
}

fn listing(registry: &Registry) -> String {
    let schemas = registry.schemas();
    let width = schemas.iter().map(|s| s.name.len()).max().unwrap_or(0);
    schemas
        .iter()
        .map(|schema| {
            let read_only = registry.get(&schema.name).is_some_and(|t| t.read_only());
            format!(
                "{:<width$}  {:<9}  {}\n",
                schema.name,
                contract::kind(read_only),
                contract::summary(&schema.description)
            )
        })
        .collect()
}
