//! What print mode's `system/init` lists besides the tools, in Claude Code's terms: the
//! `slash_commands` a print-mode prompt may start with (the custom commands and the MCP
//! servers' prompts as `mcp__SERVER__PROMPT`; skills and profiles run as `/NAME` only in the
//! chat, so they are not listed), the `skills`, the
//! `agents` the `Task` tool can run (the subagent profiles: stored, `~/.claude/agents`, a
//! trusted workspace's `.claude/agents`, and the built-in ones), and `apiKeySource`, where the
//! model's key came from.

use std::path::Path;

use crate::command::custom;
use crate::config::Config;
use crate::mcp::host::{McpHost, PromptInfo};
use crate::provider::ProviderSettings;
use crate::skill::store::Store;
use crate::skill::RunAs;

/// The `init` fields a session's catalog answers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InitCatalog {
    /// Custom command and MCP prompt names without the slash, sorted.
    pub slash_commands: Vec<String>,
    pub skills: Vec<String>,
    pub agents: Vec<String>,
    pub api_key_source: &'static str,
}

/// Claude Code's `apiKeySource` for a key read from an environment variable. Claude Code's
/// set of values is closed (`ANTHROPIC_API_KEY`, `apiKeyHelper`, `/login managed key`,
/// `none`): its environment-variable value stands for ours whatever the variable's name.
pub const FROM_ENVIRONMENT: &str = "ANTHROPIC_API_KEY";
/// For a key stored in the reasonix home's `.env` (what `reasonix setup` writes), as Claude
/// Code's `/login` stores one.
pub const FROM_STORE: &str = "/login managed key";
/// No API key: none configured, or the provider authenticates by a header.
pub const NO_KEY: &str = "none";

impl InitCatalog {
    /// The catalog of a session opened in `cwd` under `config`, with its skill store,
    /// executor model and MCP servers.
    pub fn of_session(
        config: &Config,
        cwd: &Path,
        store: Option<&Store>,
        settings: &ProviderSettings,
        mcp: &dyn McpHost,
    ) -> InitCatalog {
        let stored = store.map_or(&[][..], |s| s.skills.as_slice());
        let mut skills: Vec<String> = stored
            .iter()
            .filter(|s| s.run_as == RunAs::Inline)
            .map(|s| s.name.clone())
            .collect();
        // Without stored profiles the built-in ones are still there to run.
        let mut agents: Vec<String> = crate::app::skills::profiles(stored)
            .into_iter()
            .map(|s| s.name)
            .collect();
        let mut slash_commands: Vec<String> = custom::load_for(config, cwd)
            .commands
            .into_iter()
            .map(|c| c.name)
            .chain(mcp.prompts().iter().map(PromptInfo::command_name))
            .collect();
        slash_commands.sort();
        slash_commands.dedup();
        skills.sort();
        agents.sort();
        InitCatalog {
            slash_commands,
            skills,
            agents,
            api_key_source: api_key_source(settings, &|name| std::env::var(name).ok()),
        }
    }
}

/// Where the model's key came from, in Claude Code's values: the variable `api_key_env`
/// names when it holds the key, else the home's store, else no key.
pub fn api_key_source(
    settings: &ProviderSettings,
    env: &dyn Fn(&str) -> Option<String>,
) -> &'static str {
    let Some(key) = settings.api_key.as_deref().filter(|k| !k.is_empty()) else {
        return NO_KEY;
    };
    let in_env =
        !settings.api_key_env.is_empty() && env(&settings.api_key_env).as_deref() == Some(key);
    if in_env {
        FROM_ENVIRONMENT
    } else {
        FROM_STORE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(env: &str, key: Option<&str>) -> ProviderSettings {
        ProviderSettings {
            api_key_env: env.into(),
            api_key: key.map(str::to_string),
            ..ProviderSettings::default()
        }
    }

    #[test]
    fn the_key_source_is_the_environment_the_store_or_none() {
        let env = |name: &str| (name == "MY_KEY").then(|| "k1".to_string());
        assert_eq!(
            api_key_source(&settings("MY_KEY", Some("k1")), &env),
            FROM_ENVIRONMENT
        );
        // The variable is unset or holds something else: the key came from the store.
        assert_eq!(
            api_key_source(&settings("OTHER", Some("k2")), &env),
            FROM_STORE
        );
        assert_eq!(
            api_key_source(&settings("MY_KEY", Some("k2")), &env),
            FROM_STORE
        );
        assert_eq!(api_key_source(&settings("MY_KEY", None), &env), NO_KEY);
        assert_eq!(api_key_source(&settings("", Some("")), &env), NO_KEY);
    }
}
