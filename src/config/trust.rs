//! Workspace trust: whether the user believes a directory's `./reasonix.toml` enough to let it
//! loosen their own settings (allow rules, a wider `[permissions] mode`, its own providers and
//! model). Until then the loader lets the project file only tighten; see `load.rs` for exactly
//! what is ignored. MCP servers declared by project files have their own launch grants
//! (`mcp::grants`); trust does not launch them.
//!
//! Trust is per directory, identified by its canonical (absolute, symlink-free) path, and bound
//! to the project file as it was when the user trusted it: the store keeps that text, and a
//! workspace whose `reasonix.toml` has changed since (a `git pull`, or a model that edited the
//! file inside the workspace, which it may write) is untrusted again until the user runs
//! `reasonix trust` once more. Otherwise a misled model could widen the next session's
//! permissions by writing the file. reasonix re-records the text after its own edits of the
//! file (an "always allow" answer in the chat). A subdirectory is a separate workspace.
//!
//! The list lives in `<home>/trusted-workspaces.json`, written atomically and private (0600).
//! An unreadable or malformed file trusts nothing; changing it then is an error naming the file
//! rather than a silent rewrite.

use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::ConfigError;

pub const FILE_NAME: &str = "trusted-workspaces.json";

/// One trusted workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trusted {
    /// The canonical directory.
    pub path: String,
    /// RFC 3339, UTC.
    pub trusted_at: String,
    /// The workspace's `reasonix.toml` as it was when trusted; `None` when it had none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_file: Option<String>,
}

/// Where a workspace stands with the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    Trusted,
    /// Trusted once, but its `reasonix.toml` has changed since.
    Changed,
    Untrusted,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustFile {
    version: u32,
    workspaces: Vec<Trusted>,
}

/// The trust list of one reasonix home.
#[derive(Debug, Clone)]
pub struct TrustStore {
    path: PathBuf,
}

/// A workspace's identity: its canonical path, or the path as given when it cannot be resolved
/// (so a deleted directory can still be revoked).
pub fn identity(workspace: &Path) -> String {
    workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

impl TrustStore {
    pub fn new(home: &Path) -> TrustStore {
        TrustStore {
            path: home.join(FILE_NAME),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> Result<TrustFile, ConfigError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(TrustFile::default()),
            Err(source) => {
                return Err(ConfigError::Read {
                    path: self.path.clone(),
                    source,
                })
            }
        };
        serde_json::from_str(&text).map_err(|e| ConfigError::At {
            location: self.path.display().to_string(),
            message: format!("not a trust list ({e}); fix or delete the file"),
        })
    }

    fn write(&self, file: &TrustFile) -> Result<(), ConfigError> {
        let write_err = |source| ConfigError::Write {
            path: self.path.clone(),
            source,
        };
        let text =
            serde_json::to_string_pretty(file).map_err(|e| write_err(io::Error::other(e)))?;
        crate::fsutil::write_private(&self.path, format!("{text}\n").as_bytes()).map_err(write_err)
    }

    /// Whether `workspace` is trusted with its project file as it is now; an unreadable list
    /// trusts nothing.
    pub fn standing(&self, workspace: &Path) -> Standing {
        let id = identity(workspace);
        let Ok(file) = self.read() else {
            return Standing::Untrusted;
        };
        match file.workspaces.iter().find(|w| w.path == id) {
            Some(entry) if entry.project_file == project_text(workspace) => Standing::Trusted,
            Some(_) => Standing::Changed,
            None => Standing::Untrusted,
        }
    }

    pub fn is_trusted(&self, workspace: &Path) -> bool {
        self.standing(workspace) == Standing::Trusted
    }

    pub fn list(&self) -> Result<Vec<Trusted>, ConfigError> {
        Ok(self.read()?.workspaces)
    }

    /// Trusts `workspace` with its project file as it is now; false when it already was.
    pub fn trust(&self, workspace: &Path) -> Result<bool, ConfigError> {
        let id = identity(workspace);
        let text = project_text(workspace);
        let mut file = self.read()?;
        if file
            .workspaces
            .iter()
            .any(|w| w.path == id && w.project_file == text)
        {
            return Ok(false);
        }
        file.version = 1;
        file.workspaces.retain(|w| w.path != id);
        file.workspaces.push(Trusted {
            path: id,
            trusted_at: crate::clock::rfc3339(SystemTime::now()),
            project_file: text,
        });
        self.write(&file)?;
        Ok(true)
    }

    /// Withdraws trust in `workspace`; false when it was not trusted.
    pub fn revoke(&self, workspace: &Path) -> Result<bool, ConfigError> {
        let id = identity(workspace);
        let mut file = self.read()?;
        let before = file.workspaces.len();
        file.workspaces.retain(|w| w.path != id);
        if file.workspaces.len() == before {
            return Ok(false);
        }
        file.version = 1;
        self.write(&file)?;
        Ok(true)
    }
}

/// The workspace's `reasonix.toml` as text; `None` when there is none (or it cannot be read,
/// which the loader reports on its own).
fn project_text(workspace: &Path) -> Option<String> {
    std::fs::read_to_string(super::paths::project_file(workspace)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn trust_is_per_canonical_directory_and_survives_only_until_revoked() {
        let dir = TempDir::new("trust");
        let ws = dir.join("ws");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::os::unix::fs::symlink(&ws, dir.join("link")).unwrap();
        let store = TrustStore::new(&dir.join("home"));
        assert!(!store.is_trusted(&ws));
        assert!(store.trust(&dir.join("link")).unwrap());
        assert!(
            !store.trust(&ws).unwrap(),
            "the link and its target are one workspace"
        );
        assert!(store.is_trusted(&ws));
        assert!(!store.is_trusted(&ws.join("sub")));
        let mode = std::fs::metadata(store.path())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(store.list().unwrap().len(), 1);
        assert!(store.revoke(&ws).unwrap());
        assert!(!store.revoke(&ws).unwrap());
        assert!(!store.is_trusted(&ws));

        std::fs::write(store.path(), "not json").unwrap();
        assert!(!store.is_trusted(&ws));
        let err = store.trust(&ws).unwrap_err().to_string();
        assert!(
            err.starts_with("config: ") && err.contains("not a trust list"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(store.path()).unwrap(), "not json");
    }
}
