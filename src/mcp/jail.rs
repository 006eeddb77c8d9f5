//! The sandbox of a stdio MCP server (SPEC §3.3: "the process uses the server's writer
//! sandbox"): the configured backend and hidden paths, the reasonix home read-only, with the
//! server's own write roots (the workspace plus its `sandbox.allow_write`) and network switch
//! (on unless `sandbox = { network = false }`), or no jail when the user config says
//! `sandbox = "off"`.

use std::path::Path;
use std::sync::Arc;

use super::config::{Endpoint, ServerSandbox, ServerSpec};
use crate::config::ConfigError;
use crate::sandbox::{BashMode, Jail, Policy, Settings};

/// The base `[sandbox]` settings, or why they could not be read (an unset variable in
/// `forbid_read`); shared by every server of a run, hence the `Arc`.
pub type BaseSettings = Result<Settings, Arc<ConfigError>>;

/// The sandbox of one stdio server: its configuration and the policy its process runs under.
#[derive(Debug, Clone)]
pub struct ServerJail {
    pub config: ServerSandbox,
    /// The base `[sandbox]` settings with the server's write roots and network switch; `Err`
    /// when the base settings could not be read.
    pub policy: Result<Arc<Policy>, Arc<ConfigError>>,
}

impl ServerJail {
    /// `None` for HTTP servers, which are not our processes.
    pub fn of(spec: &ServerSpec, base: &BaseSettings) -> Option<ServerJail> {
        if !matches!(spec.endpoint, Endpoint::Stdio { .. }) {
            return None;
        }
        let settings = match &spec.sandbox {
            // `BashMode` is the jail switch of a policy; `Off` runs the command as it is.
            ServerSandbox::Off => base.clone().map(|base| Settings {
                bash: BashMode::Off,
                ..base
            }),
            ServerSandbox::Jail {
                network,
                allow_write,
            } => base.clone().map(|base| Settings {
                allow_write: allow_write.clone(),
                network: *network,
                bash: BashMode::Enforce,
                ..base
            }),
        };
        let policy = match (&spec.sandbox, settings) {
            (_, Ok(settings)) => Ok(Arc::new(Policy::new(settings))),
            // Nothing to jail: the base settings do not matter.
            (ServerSandbox::Off, Err(_)) => Ok(Arc::new(Policy::workspace_only(Path::new("/")))),
            (_, Err(why)) => Err(why),
        };
        Some(ServerJail {
            config: spec.sandbox.clone(),
            policy,
        })
    }

    /// "bwrap, network on, writes: workspace" or "off". Selecting the backend probes the host
    /// (once per process), so only listings call this.
    pub fn describe(&self) -> String {
        let backend = match (&self.config, &self.policy) {
            (ServerSandbox::Off, _) => return "off".into(),
            (_, Ok(policy)) => match policy.jail() {
                Ok(Some(Jail::Bwrap(_))) => "bwrap",
                Ok(Some(Jail::Landlock(_))) => "landlock",
                Ok(None) | Err(_) => "unavailable",
            },
            (_, Err(_)) => "unavailable",
        };
        format!("{backend}, {}", self.config)
    }
}
