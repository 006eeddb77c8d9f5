//! [`Settings`] from the `[sandbox]` table: the one mapping from configuration to the sandbox,
//! shared by the tool context (bash and the file tools) and the MCP stdio servers, which run in
//! the same jail. Path resolution stays with [`super::Policy::new`].

use std::path::{Path, PathBuf};

use super::{Backend, BashMode, Settings};
use crate::config::{self, BashSandbox, Config, ConfigError, SandboxBackend};

impl Settings {
    /// The `[sandbox]` table of `config` for a session in `cwd`, `${VAR}` expanded in
    /// `forbid_read` and the default hidden credential paths added.
    pub fn from_config(config: &Config, cwd: &Path) -> Result<Settings, ConfigError> {
        let sandbox = &config.sandbox;
        let lookup = |name: &str| std::env::var(name).ok();
        let mut forbid_read = Vec::new();
        for entry in &sandbox.forbid_read {
            forbid_read.push(PathBuf::from(config::env::expand(entry, &lookup)?));
        }
        let defaults: Vec<String> = match &sandbox.default_forbid_read {
            Some(entries) => entries.clone(),
            None => config::file::DEFAULT_FORBID_READ
                .iter()
                .map(|s| s.to_string())
                .collect(),
        };
        // A default whose variable is unset (no HOME) names no place to hide.
        forbid_read.extend(
            defaults
                .iter()
                .filter_map(|entry| config::env::expand(entry, &lookup).ok())
                .map(PathBuf::from),
        );
        forbid_read.extend(key_files(config, &lookup));
        Ok(Settings {
            workspace_root: sandbox
                .workspace_root
                .clone()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or_else(|| cwd.to_path_buf()),
            home: config.home.clone(),
            allow_write: sandbox.allow_write.clone(),
            forbid_read,
            bash: match sandbox.bash {
                BashSandbox::Enforce => BashMode::Enforce,
                BashSandbox::Off => BashMode::Off,
            },
            network: sandbox.network,
            backend: match sandbox.backend {
                SandboxBackend::Auto => Backend::Auto,
                SandboxBackend::Bwrap => Backend::Bwrap,
                SandboxBackend::Landlock => Backend::Landlock,
            },
        })
    }
}

/// The key files the configuration names (an MCP server's `private_key` given as a path rather
/// than as PEM text): credentials that live outside the home, hidden like its own. Hiding only
/// tightens, so a project's entries count too.
fn key_files(config: &Config, lookup: &dyn Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    config
        .plugins
        .iter()
        .filter_map(|plugin| plugin.oauth.as_ref()?.private_key.as_deref())
        .filter(|key| !key.trim_start().starts_with("-----BEGIN"))
        .filter_map(|key| config::env::expand(key, lookup).ok())
        .filter(|key| !key.is_empty())
        .map(PathBuf::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_key_named_by_path_is_hidden_and_pem_text_is_not_a_path() {
        let mut config = Config::default();
        for key in ["/keys/client.pem", "-----BEGIN PRIVATE KEY-----\nx\n"] {
            let plugin =
                serde_json::json!({"name": "s", "command": "s", "oauth": {"private_key": key}});
            config.plugins.push(serde_json::from_value(plugin).unwrap());
        }
        let settings = Settings::from_config(&config, Path::new("/ws")).unwrap();
        assert!(settings
            .forbid_read
            .contains(&PathBuf::from("/keys/client.pem")));
        assert!(!settings
            .forbid_read
            .iter()
            .any(|p| p.to_string_lossy().contains("BEGIN")));
    }
}
