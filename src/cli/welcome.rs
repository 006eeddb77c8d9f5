//! The first-run welcome: bare `reasonix` on a terminal when the model it would use has no
//! key. Instead of an authentication error it says how to get going: `reasonix setup` (or,
//! once a config exists, where the key goes), a local server with `setup --base-url`, or
//! `make demo`. Deciding reads the config quietly; its
//! warnings and errors are the chat's to report.

use std::path::Path;

use super::Global;
use crate::app::assemble;
use crate::config::{self, paths, LoadOptions};

/// The welcome text when bare `reasonix` would stop for want of a key, else `None`.
pub fn first_run(global: &Global) -> Option<String> {
    let cwd = match &global.cd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().ok()?,
    };
    let mut options = LoadOptions::from_env(cwd, global.config.clone()).ok()?;
    let loaded = config::load(&options).ok()?;
    if !loaded.untrusted.is_empty() {
        // The project file may hold the provider that works (a local server): then the
        // chat's trust question comes first, not a welcome about a key it may not need.
        options.trust_project = true;
        let trusted = config::load(&options).ok()?;
        let settings = trusted.config.resolve_model(None).ok()?;
        if assemble::check_key(&settings).is_ok() {
            return None;
        }
    }
    let settings = loaded.config.resolve_model(None).ok()?;
    let config_file = paths::config_file(&options.home);
    assemble::check_key(&settings).is_err().then(|| {
        text(
            &settings.name,
            &settings.api_key_env,
            &config_file,
            config_file.exists(),
        )
    })
}

fn text(provider: &str, key_env: &str, config_file: &Path, config_exists: bool) -> String {
    let config_file = config_file.display();
    let key_steps = if config_exists {
        format!(
            "\
  export {key_env}=...                give the key in the environment
  reasonix setup --api-key-stdin      or store the key read from stdin in <home>/.env
                                      ({config_file} names {key_env})"
        )
    } else {
        format!(
            "\
  reasonix setup                      write {config_file} (DeepSeek preset)
  reasonix setup --api-key-stdin      ... and store the key read from stdin
  export {key_env}=...                or give the key in the environment"
        )
    };
    format!(
        "\
Welcome to reasonix, a terminal coding agent.

No API key is set for provider `{provider}` (${key_env}), so the chat cannot start yet.

{key_steps}

A local OpenAI-compatible server (llama.cpp, Ollama, vLLM, LM Studio) needs no key:

  reasonix setup --base-url http://127.0.0.1:8080/v1 --force

writes a config for it, with the first model the server lists (--model NAME picks one).

To try reasonix without a key or a server, run `make demo` in its source tree.
Then run `reasonix` again; `reasonix help` lists every command.
"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_welcome_names_the_key_the_config_file_and_every_way_in() {
        let file = Path::new("/h/.reasonix/config.toml");
        let text = text("deepseek", "DEEPSEEK_API_KEY", file, false);
        for part in [
            "`deepseek` ($DEEPSEEK_API_KEY)",
            "reasonix setup --api-key-stdin",
            "export DEEPSEEK_API_KEY=",
            "write /h/.reasonix/config.toml",
            "reasonix setup --base-url http://127.0.0.1:8080/v1",
            "make demo",
        ] {
            assert!(text.contains(part), "missing {part}:\n{text}");
        }
    }

    #[test]
    fn after_setup_the_welcome_no_longer_offers_to_write_the_preset() {
        let file = Path::new("/h/.reasonix/config.toml");
        let text = text("deepseek", "DEEPSEEK_API_KEY", file, true);
        assert!(!text.contains("  reasonix setup   "), "{text}");
        assert!(!text.contains("write /h/.reasonix/config.toml"), "{text}");
        assert!(
            text.contains("/h/.reasonix/config.toml names DEEPSEEK_API_KEY"),
            "{text}"
        );
        assert!(text.contains("reasonix setup --api-key-stdin"), "{text}");
    }
}
