//! Where OAuth credentials live: one file per MCP server identity (the SHA-256 of its URL)
//! under `<home>/mcp-auth/`, written atomically, readable by the user only (0600 in a 0700
//! directory). A file holds the client identity at the authorization server, the token
//! endpoint it was issued by, the audience (`resource`) and the tokens. The URL is the key, so
//! a changed URL in the config never receives the token of the old one; a directory found
//! open to others is narrowed before a save. Nothing here is logged or copied into sessions.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::grant::{ClientId, Tokens};
use crate::fsutil::write_private;
use crate::hash::sha256_hex;

pub const DIR_NAME: &str = crate::config::paths::MCP_AUTH_DIR;

/// The credentials of one server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Saved {
    /// The MCP server URL these are for (checked on load).
    pub server_url: String,
    /// The audience the tokens were requested for (RFC 8707).
    pub resource: String,
    pub issuer: String,
    pub token_endpoint: String,
    pub client: ClientId,
    /// `authorization_code` or `client_credentials`.
    pub grant: String,
    pub tokens: Tokens,
    /// Scope the server asked for in a 403 `insufficient_scope` that only a new login can
    /// grant; the next `reasonix mcp login` asks for it too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wanted_scope: Option<String>,
}

#[derive(Debug, Clone)]
pub struct TokenStore {
    dir: PathBuf,
}

impl TokenStore {
    pub fn new(home: &Path) -> TokenStore {
        TokenStore {
            dir: home.join(DIR_NAME),
        }
    }

    pub fn path(&self, server_url: &str) -> PathBuf {
        let key = sha256_hex(server_url.as_bytes());
        self.dir.join(format!("{}.json", &key[..32]))
    }

    /// The credentials for `server_url`; none when absent, unreadable or for another URL.
    pub fn load(&self, server_url: &str) -> Option<Saved> {
        let text = std::fs::read_to_string(self.path(server_url)).ok()?;
        let saved: Saved = serde_json::from_str(&text).ok()?;
        (saved.server_url == server_url).then_some(saved)
    }

    pub fn save(&self, saved: &Saved) -> io::Result<()> {
        let text = serde_json::to_string_pretty(saved).map_err(io::Error::other)?;
        self.narrow_dir()?;
        write_private(&self.path(&saved.server_url), text.as_bytes())
    }

    /// A directory that already exists (made by hand, or restored from a backup) is narrowed
    /// to 0700 too: its file names tell which servers the user holds tokens for. A symlink is
    /// left alone, as the user's own arrangement.
    fn narrow_dir(&self) -> io::Result<()> {
        match std::fs::symlink_metadata(&self.dir) {
            Ok(meta) if meta.is_dir() && crate::platform::mode(&meta) & 0o077 != 0 => {
                crate::platform::set_path_mode(&self.dir, 0o700)
            }
            _ => Ok(()),
        }
    }

    /// Deletes the credentials; false when there were none.
    pub fn remove(&self, server_url: &str) -> io::Result<bool> {
        match std::fs::remove_file(self.path(server_url)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;
    use crate::mcp::oauth::grant::AuthMethod;
    use std::os::unix::fs::PermissionsExt;

    fn saved(url: &str) -> Saved {
        Saved {
            server_url: url.into(),
            resource: url.into(),
            issuer: "https://a.example".into(),
            token_endpoint: "https://a.example/token".into(),
            client: ClientId {
                client_id: "c".into(),
                client_secret: None,
                auth_method: AuthMethod::None,
            },
            grant: "authorization_code".into(),
            tokens: Tokens {
                access_token: "at".into(),
                refresh_token: Some("rt".into()),
                expires_at: Some(1),
                scope: None,
            },
            wanted_scope: None,
        }
    }

    #[test]
    fn credentials_are_private_per_url_and_removable() {
        let home = TempDir::new("oauth-store");
        let store = TokenStore::new(home.path());
        let url = "https://mcp.example/mcp";
        store.save(&saved(url)).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&store.path(url)), 0o600);
        assert_eq!(mode(&home.path().join(DIR_NAME)), 0o700);
        assert_eq!(store.load(url), Some(saved(url)));
        assert_eq!(store.load("https://mcp.example/other"), None);
        // A file copied under another server's name is not used for it.
        std::fs::copy(store.path(url), store.path("https://evil.example/mcp")).unwrap();
        assert_eq!(store.load("https://evil.example/mcp"), None);
        assert!(store.remove(url).unwrap());
        assert!(!store.remove(url).unwrap());
        assert_eq!(store.load(url), None);
    }

    #[test]
    fn an_existing_open_directory_is_made_private_on_save() {
        let home = TempDir::new("oauth-store-open");
        let dir = home.path().join(DIR_NAME);
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let store = TokenStore::new(home.path());
        store.save(&saved("https://mcp.example/mcp")).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "others may not list whose tokens are kept");
    }
}
