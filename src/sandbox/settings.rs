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
