//! Builds the permission gate and the sandbox policy from config and command-line flags.
//! Shared by every front end that runs the agent.

use std::path::{Path, PathBuf};

use crate::config::{self, BashSandbox, Config, PermissionMode, SandboxBackend};
use crate::error::Error;
use crate::permission::{self, Approver, Decision, Policy, PolicyGate, Posture};
use crate::sandbox;

/// Permission settings given on the command line.
#[derive(Debug, Clone, Default)]
pub struct PermissionFlags {
    pub posture: Option<Posture>,
    /// `--allow` / `--allowedTools` rules, added to `[permissions] allow`.
    pub allow: Vec<String>,
    /// `--deny` / `--disallowedTools` rules, added to `[permissions] deny`.
    pub deny: Vec<String>,
}

impl PermissionFlags {
    pub fn set_posture(&mut self, value: &str) -> Result<(), Error> {
        self.posture = Some(permission::parse_posture(value).map_err(Error::Usage)?);
        Ok(())
    }
}

fn rules(lists: &[&[String]], origin: &str) -> Result<Vec<permission::Rule>, Error> {
    let all: Vec<&String> = lists.iter().flat_map(|l| l.iter()).collect();
    Policy::parse_rules(&all).map_err(|e| Error::Usage(format!("{e} (in {origin})")))
}

/// The gate for one run: config rules plus flag rules, the posture from the flags (default
/// ask), and the approver when the front end can ask.
pub fn gate(
    config: &Config,
    workspace: &Path,
    flags: &PermissionFlags,
    approver: Option<Box<dyn Approver>>,
) -> Result<PolicyGate, Error> {
    let permissions = &config.permissions;
    let mode = match permissions.mode {
        PermissionMode::Ask => Decision::Ask,
        PermissionMode::Allow => Decision::Allow,
        PermissionMode::Deny => Decision::Deny,
    };
    let mut policy = Policy::new(mode, workspace.to_path_buf(), home_dir());
    let origin = "[permissions] or --allow/--deny";
    policy.allow = rules(&[&permissions.allow, &flags.allow], origin)?;
    policy.ask = rules(&[&permissions.ask], origin)?;
    policy.deny = rules(&[&permissions.deny, &flags.deny], origin)?;
    Ok(PolicyGate::new(
        policy,
        flags.posture.unwrap_or(Posture::Ask),
        approver,
    ))
}

fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME").map(PathBuf::from)
}

/// The sandbox policy from `[sandbox]`, with `${VAR}` expanded in `forbid_read`.
pub fn sandbox_policy(config: &Config, cwd: &Path) -> Result<sandbox::Policy, Error> {
    let settings = &config.sandbox;
    let lookup = |name: &str| std::env::var(name).ok();
    let forbid_read = settings
        .forbid_read
        .iter()
        .map(|entry| config::env::expand(entry, &lookup).map(PathBuf::from))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(sandbox::Policy::new(sandbox::Settings {
        workspace_root: settings
            .workspace_root
            .clone()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| cwd.to_path_buf()),
        home: config.home.clone(),
        allow_write: settings.allow_write.clone(),
        forbid_read,
        bash: match settings.bash {
            BashSandbox::Enforce => sandbox::BashMode::Enforce,
            BashSandbox::Off => sandbox::BashMode::Off,
        },
        network: settings.network,
        backend: match settings.backend {
            SandboxBackend::Auto => sandbox::Backend::Auto,
            SandboxBackend::Bwrap => sandbox::Backend::Bwrap,
            SandboxBackend::Landlock => sandbox::Backend::Landlock,
        },
    }))
}
