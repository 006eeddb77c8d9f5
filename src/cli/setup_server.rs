//! `reasonix setup --base-url URL`: a user config for any OpenAI-compatible server (llama.cpp,
//! vLLM, Ollama, LM Studio, a gateway). It owns the flags of that mode, the choice of model
//! (the one named, else the first the server's models endpoint lists) and the text of the
//! config it writes; `setup.rs` owns writing the file and the key store.

use std::path::Path;

use crate::cancel::CancelToken;
use crate::cli::error::Error;
use crate::config::{env, Config};

/// What `--base-url` and its companions asked for.
#[derive(Debug, Default)]
pub struct ServerFlags {
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub api_key_env: Option<String>,
    pub no_key: bool,
    pub name: Option<String>,
}

/// The provider name written when `--name` is absent.
const DEFAULT_NAME: &str = "local";

/// A server config, checked and ready to be written.
pub struct ServerSetup {
    pub name: String,
    pub base_url: String,
    pub model: String,
    /// Every model the server listed (the chosen one first when listed), for `models = [...]`.
    pub models: Vec<String>,
    pub api_key_env: Option<String>,
}

impl ServerFlags {
    /// Whether any flag of this mode was given (then `--base-url` is required).
    pub fn any(&self) -> bool {
        self.base_url.is_some()
            || self.model.is_some()
            || self.api_key_env.is_some()
            || self.no_key
            || self.name.is_some()
    }

    /// Checks the flags, then (without `--model`) asks the server which models it serves.
    pub fn resolve(self, home: &Path) -> Result<ServerSetup, Error> {
        let base_url = self.base_url.ok_or_else(|| {
            Error::Usage(
                "setup: --model, --name, --api-key-env and --no-key go with --base-url URL".into(),
            )
        })?;
        let base_url = checked_url(&base_url)?;
        let name = self.name.unwrap_or_else(|| DEFAULT_NAME.to_string());
        if !is_plain_name(&name) {
            return Err(Error::Usage(format!(
                "setup: --name `{name}` must be letters, digits, `-` or `_`"
            )));
        }
        let api_key_env = key_choice(&base_url, self.api_key_env, self.no_key)?;
        let (model, models) = match self.model {
            Some(model) if model.trim().is_empty() => {
                return Err(Error::Usage("setup: --model needs a model name".into()))
            }
            Some(model) => (model.clone(), vec![model]),
            None => {
                let listed = list_models(home, &name, &base_url, api_key_env.as_deref())?;
                let first = listed.first().cloned().ok_or_else(|| {
                    Error::Failed(format!(
                        "setup: {base_url} lists no models; name one with --model NAME"
                    ))
                })?;
                (first, listed)
            }
        };
        Ok(ServerSetup {
            name,
            base_url,
            model,
            models,
            api_key_env,
        })
    }
}

/// `http(s)://host[:port][/path]`, without a trailing slash.
fn checked_url(url: &str) -> Result<String, Error> {
    let url = url.trim().trim_end_matches('/');
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    match rest {
        Some(rest) if !rest.is_empty() && !rest.starts_with('/') && !url.contains(char::is_whitespace) => {
            Ok(url.to_string())
        }
        _ => Err(Error::Usage(format!(
            "setup: --base-url `{url}` is not an http:// or https:// URL, e.g. http://127.0.0.1:8080/v1"
        ))),
    }
}

fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The key variable: the one named, none with `--no-key`, none by default for plain-http
/// servers (local ones need none); a remote https endpoint must say which.
fn key_choice(
    base_url: &str,
    api_key_env: Option<String>,
    no_key: bool,
) -> Result<Option<String>, Error> {
    match (api_key_env, no_key) {
        (Some(_), true) => Err(Error::Usage(
            "setup: --api-key-env and --no-key exclude each other".into(),
        )),
        (Some(var), false) if env::is_var_name(&var) => Ok(Some(var)),
        (Some(var), false) => Err(Error::Usage(format!(
            "setup: --api-key-env `{var}` is not an environment variable name"
        ))),
        (None, true) => Ok(None),
        (None, false) if base_url.starts_with("http://") => Ok(None),
        (None, false) => Err(Error::Usage(format!(
            "setup: {base_url} is https; say where its key is with --api-key-env VAR, or --no-key if it needs none"
        ))),
    }
}

/// The server's models, through the same provider path `reasonix models` uses.
fn list_models(
    home: &Path,
    name: &str,
    base_url: &str,
    api_key_env: Option<&str>,
) -> Result<Vec<String>, Error> {
    let probe = ServerSetup {
        name: name.to_string(),
        base_url: base_url.to_string(),
        model: "probe".to_string(),
        models: vec!["probe".to_string()],
        api_key_env: api_key_env.map(str::to_string),
    };
    let config: Config = probe.config()?;
    let store = env::read_store(home).unwrap_or_default();
    let lookup = |var: &str| {
        std::env::var(var)
            .ok()
            .filter(|v| !v.is_empty())
            .or_else(|| store.get(var).cloned())
    };
    let settings = config.resolve_model_with(None, &lookup)?;
    crate::provider::openai::list_models(&settings, &CancelToken::new(), &mut |_| {}).map_err(
        |e| {
            Error::Failed(format!(
                "setup: cannot list the models of {base_url}: {e}; start the server, or name the model with --model NAME"
            ))
        },
    )
}

impl ServerSetup {
    /// The config file: complete and valid on its own, commented for the first edit.
    pub fn text(&self) -> String {
        let quote = |s: &str| serde_json::Value::from(s).to_string();
        let models: Vec<String> = self.models.iter().map(|m| quote(m)).collect();
        let key_line = match &self.api_key_env {
            Some(var) => format!(
                "# The key comes from this environment variable, else from <home>/.env.\napi_key_env    = {}\n",
                quote(var)
            ),
            None => "# This server needs no key (set api_key_env = \"VAR\" if it comes to need one).\n"
                .to_string(),
        };
        format!(
            "\
# reasonix configuration, written by `reasonix setup --base-url`.
# Every key is documented in reasonix.example.toml in the source tree.
# Layering: this file < ./reasonix.toml in a trusted project < --config FILE < flags.

default_model = {name}

[[providers]]
name     = {name}
kind     = \"openai\"                  # OpenAI-compatible /chat/completions
base_url = {base_url}
models   = [{models}]
default  = {model}
{key_line}
[permissions]
mode  = \"ask\"                        # writer fallback when no rule matches: ask|allow|deny
deny  = [\"Bash(rm -rf*)\", \"Bash(git push*)\"]
allow = []
ask   = []
",
            name = quote(&self.name),
            base_url = quote(&self.base_url),
            models = models.join(", "),
            model = quote(&self.model),
        )
    }

    /// The config this text stands for, read back through the real loader's schema.
    fn config(&self) -> Result<Config, Error> {
        crate::config::document::from_str(&self.text()).map_err(|e| {
            Error::Failed(format!(
                "setup: the config written for the server does not load: {e}"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(models: &[&str], key: Option<&str>) -> ServerSetup {
        ServerSetup {
            name: "local".into(),
            base_url: "http://127.0.0.1:8080/v1".into(),
            model: models[0].into(),
            models: models.iter().map(|m| m.to_string()).collect(),
            api_key_env: key.map(str::to_string),
        }
    }

    #[test]
    fn the_written_text_is_a_valid_config_that_resolves_to_the_server() {
        for key in [None, Some("LOCAL_KEY")] {
            let config = setup(&["qwen3", "llama \"3\""], key).config().unwrap();
            let none = |_: &str| None;
            let settings = config.resolve_model_with(None, &none).unwrap();
            assert_eq!(settings.model, "qwen3");
            assert_eq!(settings.base_url, "http://127.0.0.1:8080/v1");
            assert_eq!(settings.api_key_env, key.unwrap_or(""));
            let other = config
                .resolve_model_with(Some("llama \"3\""), &none)
                .unwrap();
            assert_eq!(other.model, "llama \"3\"");
        }
    }

    #[test]
    fn urls_names_and_key_choices_are_checked() {
        assert_eq!(
            checked_url(" http://h:1/v1/ ").unwrap(),
            "http://h:1/v1".to_string()
        );
        for bad in ["ftp://h", "http://", "h:8080", "http:///x", "http://a b"] {
            assert!(checked_url(bad).is_err(), "{bad}");
        }
        assert!(is_plain_name("my-server_2"));
        assert!(!is_plain_name("a b") && !is_plain_name(""));
        assert_eq!(key_choice("http://h", None, false).unwrap(), None);
        assert!(key_choice("https://h", None, false).is_err());
        assert_eq!(key_choice("https://h", None, true).unwrap(), None);
        assert!(key_choice("http://h", Some("K".into()), true).is_err());
        assert!(key_choice("http://h", Some("1bad".into()), false).is_err());
    }
}
