//! Launch grants for servers declared by project files (`./reasonix.toml`, `.mcp.json`): a
//! repository must not start processes or open connections on its own. A grant names the
//! workspace, the server and the SHA-256 of the server's launch identity (command, arguments
//! and environment variable names, or the URL), so changing any of those invalidates it.
//!
//! Grants live in `<home>/mcp-grants.json`, written atomically. An unreadable or malformed
//! file grants nothing (and is replaced on the next write).

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub const FILE_NAME: &str = crate::config::paths::MCP_GRANTS_FILE;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    pub workspace: String,
    pub server: String,
    /// Hex SHA-256 of the launch identity.
    pub identity: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct GrantFile {
    version: u32,
    grants: Vec<Grant>,
}

/// The grant file of one reasonix home.
#[derive(Debug, Clone)]
pub struct GrantStore {
    path: PathBuf,
}

impl GrantStore {
    pub fn new(home: &Path) -> GrantStore {
        GrantStore {
            path: home.join(FILE_NAME),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> GrantFile {
        std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    }

    pub fn is_granted(&self, workspace: &Path, server: &str, identity: &str) -> bool {
        let workspace = workspace.to_string_lossy();
        self.read()
            .grants
            .iter()
            .any(|g| g.workspace == workspace && g.server == server && g.identity == identity)
    }

    /// Records a grant, replacing any earlier one for the same workspace and server.
    pub fn grant(&self, workspace: &Path, server: &str, identity: &str) -> io::Result<()> {
        let mut file = self.read();
        let grant = Grant {
            workspace: workspace.to_string_lossy().into_owned(),
            server: server.to_string(),
            identity: identity.to_string(),
        };
        file.version = 1;
        file.grants
            .retain(|g| !(g.workspace == grant.workspace && g.server == grant.server));
        file.grants.push(grant);
        let text = serde_json::to_string_pretty(&file).map_err(io::Error::other)?;
        crate::fsutil::write_private(&self.path, format!("{text}\n").as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;

    #[test]
    fn grants_are_per_workspace_server_and_identity_and_replace_each_other() {
        let dir = TempDir::new("grants");
        let store = GrantStore::new(&dir.join("home"));
        let ws = Path::new("/ws");
        assert!(!store.is_granted(ws, "s", "id1"));
        store.grant(ws, "s", "id1").unwrap();
        assert!(store.is_granted(ws, "s", "id1"));
        assert!(!store.is_granted(Path::new("/other"), "s", "id1"));
        assert!(!store.is_granted(ws, "t", "id1"));
        store.grant(ws, "s", "id2").unwrap();
        assert!(
            !store.is_granted(ws, "s", "id1"),
            "a new identity replaces the old grant"
        );
        assert!(store.is_granted(ws, "s", "id2"));
        std::fs::write(store.path(), "not json").unwrap();
        assert!(!store.is_granted(ws, "s", "id2"));
        store.grant(ws, "s", "id3").unwrap();
        assert!(store.is_granted(ws, "s", "id3"));
    }
}
