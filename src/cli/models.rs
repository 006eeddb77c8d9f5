//! `reasonix models [PROVIDER]`: the models an endpoint offers, from its models URL.

use super::lex::{Arg, Lexer};
use super::{print_out, unknown_flag, Global};
use crate::cancel::CancelToken;
use crate::cli::error::{exit, Error};
use crate::config::{self, LoadOptions};
use crate::term::sanitize::sanitize;

pub const HELP: &str = "\
Usage: reasonix models [PROVIDER]

Lists the models PROVIDER (default: the provider of default_model) offers, one per line,
from its models_url (or base_url + /models). Models named in the config are marked with *.
";

pub fn main(mut global: Global, lexer: &mut Lexer) -> Result<i32, Error> {
    let mut provider_name = None;
    while let Some(arg) = lexer.next().map_err(Error::Usage)? {
        if global.accept(&arg, lexer)? {
            continue;
        }
        match arg {
            Arg::Value(name) if provider_name.is_none() => provider_name = Some(name),
            other => return Err(unknown_flag("models", &other)),
        }
    }
    global.enter_dir()?;
    let cwd = std::env::current_dir().map_err(|e| Error::io("reading the working directory", e))?;
    let loaded = config::load(&LoadOptions::from_env(cwd, global.config.clone())?)?;
    for warning in &loaded.warnings {
        eprintln!("reasonix: warning: {warning}");
    }
    let settings = loaded.config.resolve_model(provider_name.as_deref())?;
    let configured: Vec<String> = loaded
        .config
        .provider(&settings.name)
        .map(|p| p.model_names().into_iter().map(str::to_string).collect())
        .unwrap_or_default();
    let models =
        crate::provider::openai::list_models(&settings, &CancelToken::new(), &mut |retry| {
            eprintln!("reasonix: warning: {}", sanitize(&retry.to_string()))
        })?;
    let mut text = String::new();
    for model in models {
        let mark = if configured.contains(&model) {
            "*"
        } else {
            " "
        };
        text.push_str(&format!("{mark} {model}\n"));
    }
    print_out(&text);
    Ok(exit::OK)
}
