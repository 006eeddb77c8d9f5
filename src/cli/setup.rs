//! `reasonix setup`: writes the DeepSeek preset, or with `--base-url` a config for any
//! OpenAI-compatible server (see `setup_server`), to `<home>/config.toml` unless a config is
//! already there, and optionally stores the provider key from stdin in `<home>/.env`.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use super::lex::{Arg, Lexer};
use super::setup_server::{ServerFlags, ServerSetup};
use super::{print_out, unknown_flag, Global};
use crate::cli::error::{exit, Error};
use crate::config::{env, paths};
use crate::fsutil;

pub const HELP: &str = "\
Usage: reasonix setup [--force] [--api-key-stdin]
       reasonix setup --base-url URL [--model NAME] [--api-key-env VAR | --no-key]
                      [--name NAME] [--force] [--api-key-stdin]

Writes <home>/config.toml: the DeepSeek preset (models deepseek-v4-flash and
deepseek-v4-pro at https://api.deepseek.com), or with --base-url a config for any
OpenAI-compatible server (llama.cpp, vLLM, Ollama, LM Studio, a gateway). An existing
file is left alone. <home> is $REASONIX_HOME, else ~/.reasonix.

Flags:
  --force           Overwrite an existing config.toml; the old one is kept as config.toml.bak
  --api-key-stdin   Read one line from stdin and store it in <home>/.env (mode 0600) as
                    DEEPSEEK_API_KEY, or as the --api-key-env variable; never printed
  --base-url URL    The server's OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1
  --model NAME      The model to use; without it, the first one the server's /models lists
  --api-key-env VAR The environment variable holding the server's key (needed for https)
  --no-key          The server needs no key (the default for http:// URLs)
  --name NAME       The provider's name in the config (default: local)
";

/// The variable the preset's provider reads its key from.
const KEY_NAME: &str = "DEEPSEEK_API_KEY";

/// The config `reasonix setup` writes: working as is, commented for the first edit.
pub const PRESET: &str = r#"# reasonix configuration, written by `reasonix setup`.
# Every key is documented in reasonix.example.toml in the source tree.
# Layering: this file < ./reasonix.toml in a project < --config FILE < command-line flags.

# A provider name (-> its default model), a bare model name, or "provider/model".
default_model = "deepseek"

[[providers]]
name           = "deepseek"
kind           = "openai"                  # OpenAI-compatible /chat/completions
base_url       = "https://api.deepseek.com"
models         = ["deepseek-v4-flash", "deepseek-v4-pro"]
default        = "deepseek-v4-flash"       # what `--model deepseek` picks
# The key comes from this environment variable, else from <home>/.env
# (`reasonix setup --api-key-stdin` stores it there, mode 0600).
api_key_env    = "DEEPSEEK_API_KEY"
context_window = 1000000                   # tokens; older history is compacted near this limit

[agent]
# temperature      = 0.0
# reasoning_effort = "high"

[permissions]
mode  = "ask"                              # writer fallback when no rule matches: ask|allow|deny
deny  = ["Bash(rm -rf*)", "Bash(git push*)"]   # hard-blocked in every mode
allow = []                                 # never prompted, e.g. "Bash(cargo test:*)"
ask   = []                                 # always prompted

[sandbox]
# bash    = "enforce"   # jail bash (bubblewrap/landlock); "off" runs it unconfined
# network = false       # let sandboxed bash reach the network
"#;

struct Flags {
    force: bool,
    key_from_stdin: bool,
    server: ServerFlags,
}

pub fn main(mut global: Global, lexer: &mut Lexer) -> Result<i32, Error> {
    let mut flags = Flags {
        force: false,
        key_from_stdin: false,
        server: ServerFlags::default(),
    };
    while let Some(arg) = lexer.next().map_err(Error::Usage)? {
        if global.accept(&arg, lexer)? {
            continue;
        }
        match &arg {
            Arg::Long(name) if name == "force" => flags.force = true,
            Arg::Long(name) if name == "api-key-stdin" => flags.key_from_stdin = true,
            Arg::Long(name) if name == "no-key" => flags.server.no_key = true,
            Arg::Long(name) if name == "base-url" => {
                flags.server.base_url = Some(value(lexer, name)?)
            }
            Arg::Long(name) if name == "model" => flags.server.model = Some(value(lexer, name)?),
            Arg::Long(name) if name == "name" => flags.server.name = Some(value(lexer, name)?),
            Arg::Long(name) if name == "api-key-env" => {
                flags.server.api_key_env = Some(value(lexer, name)?)
            }
            Arg::Long(name) if name == "help" => {
                print_out(HELP);
                return Ok(exit::OK);
            }
            Arg::Short('h') => {
                print_out(HELP);
                return Ok(exit::OK);
            }
            _ => return Err(unknown_flag("setup", &arg)),
        }
    }
    global.enter_dir()?;
    let home = home()?;
    let server = if flags.server.any() {
        if let Some(existing) = kept_config(&home, flags.force)? {
            print_out(&existing);
            return Ok(exit::OK);
        }
        Some(flags.server.resolve(&home)?)
    } else {
        None
    };
    let key_name = match &server {
        Some(server) => server.api_key_env.clone(),
        None => Some(KEY_NAME.to_string()),
    };
    if flags.key_from_stdin && key_name.is_none() {
        return Err(Error::Usage(
            "setup: --api-key-stdin needs --api-key-env VAR to name where the key goes".into(),
        ));
    }
    // Read the key before writing anything, so a missing key leaves no half-done setup.
    let key = if flags.key_from_stdin {
        Some(read_key()?)
    } else {
        None
    };
    let (text, what) = match &server {
        Some(server) => (server.text(), described(server)),
        None => (PRESET.to_string(), "DeepSeek preset".to_string()),
    };
    let mut report = write_config(&home, flags.force, &text, &what)?;
    match (key, key_name) {
        (Some(key), Some(name)) => {
            env::store_key(&home, &name, &key)?;
            report.push_str(&format!(
                "stored {name} in {} (mode 0600)\n",
                paths::env_file(&home).display()
            ));
        }
        (None, Some(name)) if !key_available(&home, &name) => report.push_str(&format!(
            "next: export {name}=... or pipe the key to `reasonix setup --api-key-stdin`\n"
        )),
        _ => {}
    }
    if server.is_some() {
        report.push_str("next: reasonix run \"say hello\"   or   reasonix   for the chat\n");
    }
    print_out(&report);
    Ok(exit::OK)
}

fn value(lexer: &mut Lexer, name: &str) -> Result<String, Error> {
    lexer.value(&format!("--{name}")).map_err(Error::Usage)
}

/// What the report calls a server config.
fn described(server: &ServerSetup) -> String {
    format!(
        "provider `{}`: {} at {}",
        server.name, server.model, server.base_url
    )
}

/// The report when a config exists and `--force` was not given, checked before the server is
/// asked for its models.
fn kept_config(home: &Path, force: bool) -> Result<Option<String>, Error> {
    let path = paths::config_file(home);
    if force || !path.exists() {
        return Ok(None);
    }
    Ok(Some(format!(
        "left {} alone: it already exists (--force overwrites it and keeps a .bak)\n",
        path.display()
    )))
}

fn home() -> Result<PathBuf, Error> {
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    paths::home_from(
        std::env::var_os("REASONIX_HOME"),
        std::env::var_os("HOME"),
        &cwd,
    )
    .ok_or(Error::Config(crate::config::ConfigError::NoHome))
}

/// One line from stdin, without its line ending or surrounding blanks.
fn read_key() -> Result<String, Error> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| Error::io("cannot read the key from stdin", e))?;
    let key = line.trim();
    if key.is_empty() {
        return Err(Error::Usage(
            "--api-key-stdin: stdin had no key; pipe it in, e.g. `printf '%s' \"$KEY\" | reasonix setup --api-key-stdin`".into(),
        ));
    }
    Ok(key.to_string())
}

/// Writes `text` unless a config exists (or `force`); returns what it did, one line each.
fn write_config(home: &Path, force: bool, text: &str, what: &str) -> Result<String, Error> {
    let path = paths::config_file(home);
    let existing = match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(format!("cannot read {}", path.display()), e)),
    };
    env::create_home(home)?;
    let mut report = String::new();
    match existing {
        Some(_) if !force => {
            return Ok(format!(
                "left {} alone: it already exists (--force overwrites it and keeps a .bak)\n",
                path.display()
            ));
        }
        Some(old) => {
            let backup = path.with_extension("toml.bak");
            let mode = std::fs::metadata(&path)
                .map(|m| crate::platform::mode(&m) & 0o777)
                .unwrap_or(0o600);
            fsutil::write_atomic(&backup, &old, Some(mode))
                .map_err(|e| Error::io(format!("cannot write {}", backup.display()), e))?;
            report.push_str(&format!("saved the old config as {}\n", backup.display()));
        }
        None => {}
    }
    fsutil::write_atomic(&path, text.as_bytes(), None)
        .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?;
    report.insert_str(0, &format!("wrote {} ({what})\n", path.display()));
    Ok(report)
}

/// Whether a run would find the key: in the environment or in the store.
fn key_available(home: &Path, name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.is_empty())
        || env::read_store(home).is_ok_and(|s| s.get(name).is_some_and(|v| !v.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{load, LoadOptions};
    use crate::fsutil::scratch::TempDir;

    #[test]
    fn preset_loads_without_warnings_and_resolves_both_models() {
        let dir = TempDir::new("setup-preset");
        dir.write("config.toml", PRESET);
        let loaded = load(&LoadOptions {
            home: dir.path().to_path_buf(),
            cwd: dir.path().to_path_buf(),
            extra: None,
            trust_project: false,
            strict: false,
            claude_setting_sources: None,
        })
        .unwrap();
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        let none = |_: &str| None;
        let flash = loaded.config.resolve_model_with(None, &none).unwrap();
        assert_eq!(flash.model, "deepseek-v4-flash");
        assert_eq!(flash.base_url, "https://api.deepseek.com");
        assert_eq!(flash.api_key_env, KEY_NAME);
        let pro = loaded
            .config
            .resolve_model_with(Some("deepseek-v4-pro"), &none)
            .unwrap();
        assert_eq!(pro.context_window, 1_000_000);
    }
}
