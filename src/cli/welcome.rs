//! The first-run welcome: bare `reasonix` on a terminal when the model it would use has no
//! key. Instead of an authentication error it says how to get going: `reasonix setup`, a
//! local server that needs no key, or `make demo`. Deciding reads the config quietly; its
//! warnings and errors are the chat's to report.

use std::path::Path;

use super::{assemble, Global};
use crate::config::{self, paths, LoadOptions};

/// The welcome text when bare `reasonix` would stop for want of a key, else `None`.
pub fn first_run(global: &Global) -> Option<String> {
    let cwd = match &global.cd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().ok()?,
    };
    let options = LoadOptions::from_env(cwd, global.config.clone()).ok()?;
    let loaded = config::load(&options).ok()?;
    let settings = loaded.config.resolve_model(None).ok()?;
    assemble::check_key(&settings).is_err().then(|| {
        text(
            &settings.name,
            &settings.api_key_env,
            &paths::config_file(&options.home),
        )
    })
}

fn text(provider: &str, key_env: &str, config_file: &Path) -> String {
    let config_file = config_file.display();
    format!(
        "\
Welcome to reasonix, a terminal coding agent.

No API key is set for provider `{provider}` (${key_env}), so the chat cannot start yet.

  reasonix setup                      write {config_file} (DeepSeek preset)
  reasonix setup --api-key-stdin      ... and store the key read from stdin
  export {key_env}=...                or give the key in the environment

A local OpenAI-compatible server (llama.cpp, Ollama, vLLM) needs no key. Add to
{config_file}:

  default_model = \"local\"

  [[providers]]
  name = \"local\"
  base_url = \"http://127.0.0.1:8080/v1\"
  model = \"qwen3\"

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
        let text = text(
            "deepseek",
            "DEEPSEEK_API_KEY",
            Path::new("/h/.reasonix/config.toml"),
        );
        for part in [
            "`deepseek` ($DEEPSEEK_API_KEY)",
            "reasonix setup --api-key-stdin",
            "export DEEPSEEK_API_KEY=",
            "write /h/.reasonix/config.toml",
            "base_url = \"http://127.0.0.1:8080/v1\"",
            "make demo",
        ] {
            assert!(text.contains(part), "missing {part}:\n{text}");
        }
    }
}
