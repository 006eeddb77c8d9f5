//! Launch authorization for MCP servers (§3.3 launch grants): user-installed servers start,
//! project-declared ones need `--trust-project-mcp`, a stored grant for their exact identity,
//! or a yes from a person through a [`LaunchApprover`] (the chat's modal, `reasonix mcp`'s
//! terminal question).

use std::fmt;
use std::path::Path;

use super::config::ServerSpec;
use super::grants::GrantStore;
use super::manager::McpOptions;

/// A project-declared server asking to be started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchRequest {
    pub server: String,
    /// The file that declared it (`reasonix.toml`, `.mcp.json`).
    pub origin: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// The command line (environment values elided) or the URL that would be started or
    /// contacted.
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchAnswer {
    /// Start it for this session only.
    Session,
    /// Start it and remember the grant for this workspace.
    Always,
    Deny,
}

/// The interactive side of launch grants: the chat UI implements it with a modal,
/// `reasonix mcp` with a terminal question; [`super::start`] consults it.
pub trait LaunchApprover: Send + Sync {
    fn approve_launch(&self, request: &LaunchRequest) -> LaunchAnswer;
}

/// Why a server was not launched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotLaunched {
    /// A project server without a grant where no one can be asked.
    NoGrant {
        origin: &'static str,
    },
    Declined,
}

impl fmt::Display for NotLaunched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotLaunched::NoGrant { origin } => write!(
                f,
                "it is declared in {origin} and has no launch grant for this workspace; approve \
                 it once interactively or pass --trust-project-mcp"
            ),
            NotLaunched::Declined => write!(f, "the user declined to launch it"),
        }
    }
}

impl std::error::Error for NotLaunched {}

/// Whether a server may launch. User-installed servers always may; project servers need
/// `--trust-project-mcp`, a stored grant for this exact identity, or a yes from the user.
pub(super) fn authorize(
    spec: &ServerSpec,
    cwd: &Path,
    options: &McpOptions,
    grants: &GrantStore,
    warn: &mut dyn FnMut(String),
) -> Result<(), NotLaunched> {
    if !spec.origin.needs_grant() || options.trust_project {
        return Ok(());
    }
    let identity = spec.identity_hash();
    if grants.is_granted(cwd, &spec.name, &identity) {
        return Ok(());
    }
    let approver = options.approver.as_ref().filter(|_| options.interactive);
    let Some(approver) = approver else {
        return Err(NotLaunched::NoGrant {
            origin: spec.origin.describe(),
        });
    };
    let request = LaunchRequest {
        server: spec.name.clone(),
        origin: spec.origin.describe().to_string(),
        transport: spec.transport_name().to_string(),
        detail: spec.launch_text(),
    };
    match approver.approve_launch(&request) {
        LaunchAnswer::Session => Ok(()),
        LaunchAnswer::Always => {
            if let Err(e) = grants.grant(cwd, &spec.name, &identity) {
                warn(format!(
                    "mcp: could not save the grant for `{}` to {}: {e}",
                    spec.name,
                    grants.path().display()
                ));
            }
            Ok(())
        }
        LaunchAnswer::Deny => Err(NotLaunched::Declined),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_say_how_to_launch_the_server() {
        let no_grant = NotLaunched::NoGrant {
            origin: ".mcp.json",
        };
        assert_eq!(
            no_grant.to_string(),
            "it is declared in .mcp.json and has no launch grant for this workspace; approve it \
             once interactively or pass --trust-project-mcp"
        );
        assert_eq!(
            NotLaunched::Declined.to_string(),
            "the user declined to launch it"
        );
    }
}
