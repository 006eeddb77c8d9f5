//! `<home>/serve-auth.json`: the stored serve credentials (`token`, `password_hash`), kept out
//! of `config.toml` in a file of their own (mode 0600, written atomically), which the jail
//! masks and the file tools refuse. Also the move of the legacy `[serve] token` and
//! `password_hash` keys out of `config.toml` (`reasonix serve --migrate-auth`); the flags and
//! the messages are the CLI's.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The file's name in the reasonix home: the one `config::paths` lists among the home's
/// secrets, so the jail and the file tools hide it.
pub const FILE: &str = crate::config::paths::SERVE_AUTH_FILE;
/// A credentials file is a few hundred bytes; anything past this is not one.
const MAX_BYTES: u64 = 64 * 1024;

/// What the file holds; both optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Stored {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password_hash: Option<String>,
}

#[derive(Debug)]
pub enum AuthFileError {
    Read(PathBuf, std::io::Error),
    TooLarge(PathBuf),
    Parse(PathBuf, serde_json::Error),
    Write(PathBuf, std::io::Error),
}

impl std::fmt::Display for AuthFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuthFileError::Read(path, err) => {
                write!(f, "serve-auth: cannot read {}: {err}", path.display())
            }
            AuthFileError::TooLarge(path) => write!(
                f,
                "serve-auth: {} is larger than {MAX_BYTES} bytes; it holds a token and a hash only",
                path.display()
            ),
            AuthFileError::Parse(path, err) => write!(
                f,
                "serve-auth: {}: {err}; expected {{\"token\": \"…\", \"password_hash\": \"…\"}}",
                path.display()
            ),
            AuthFileError::Write(path, err) => {
                write!(f, "serve-auth: cannot write {}: {err}", path.display())
            }
        }
    }
}

impl std::error::Error for AuthFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AuthFileError::Read(_, err) | AuthFileError::Write(_, err) => Some(err),
            AuthFileError::Parse(_, err) => Some(err),
            AuthFileError::TooLarge(_) => None,
        }
    }
}

pub fn path(home: &Path) -> PathBuf {
    home.join(FILE)
}

/// The stored credentials; none when the file does not exist.
pub fn load(home: &Path) -> Result<Stored, AuthFileError> {
    let path = path(home);
    let file = match std::fs::File::open(&path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Stored::default()),
        Err(err) => return Err(AuthFileError::Read(path, err)),
    };
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| AuthFileError::Read(path.clone(), err))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(AuthFileError::TooLarge(path));
    }
    serde_json::from_slice(&bytes).map_err(|err| AuthFileError::Parse(path, err))
}

/// Replaces the file (0600, atomically, its directory created private when missing).
pub fn save(home: &Path, stored: &Stored) -> Result<(), AuthFileError> {
    let path = path(home);
    let mut text = serde_json::to_string_pretty(stored).unwrap_or_default();
    text.push('\n');
    crate::fsutil::write_private(&path, text.as_bytes())
        .map_err(|err| AuthFileError::Write(path, err))
}

/// `config.toml`'s text without the `[serve]` keys `token` and `password_hash` (in a
/// `[serve]` table or as dotted `serve.…` keys at the top), comments and everything else
/// kept. `None` when a key is written some other way (an inline table, a multi-line string)
/// and must be removed by hand.
pub fn strip_legacy_keys(text: &str) -> Option<String> {
    const KEYS: [&str; 2] = ["token", "password_hash"];
    let mut table = String::new();
    let mut kept = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            table = trimmed
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap_or("")
                .trim()
                .trim_matches('"')
                .to_string();
        } else if let Some((key, value)) = trimmed.split_once('=') {
            let key = key.trim().trim_matches('"');
            let value = value.trim_start();
            let ours = match table.as_str() {
                "serve" => KEYS.contains(&key),
                "" if key == "serve" && KEYS.iter().any(|k| value.contains(k)) => return None,
                "" => KEYS.iter().any(|k| key == format!("serve.{k}")),
                _ => false,
            };
            if ours {
                if value.starts_with("\"\"\"") || value.starts_with("'''") {
                    return None;
                }
                continue;
            }
        }
        kept.push_str(line);
    }
    Some(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_is_empty_and_a_saved_one_reads_back_private() {
        let dir = crate::fsutil::scratch::TempDir::new("serve-auth");
        assert_eq!(load(dir.path()).unwrap(), Stored::default());
        let stored = Stored {
            token: Some("t".repeat(40)),
            password_hash: None,
        };
        save(dir.path(), &stored).unwrap();
        assert_eq!(load(dir.path()).unwrap(), stored);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(path(dir.path()))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn bad_files_are_refused_with_the_path() {
        let dir = crate::fsutil::scratch::TempDir::new("serve-auth");
        dir.write(FILE, br#"{"token": 1}"#);
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(
            err.starts_with("serve-auth: ") && err.contains(FILE),
            "{err}"
        );
        dir.write(FILE, br#"{"tokn": "x"}"#);
        assert!(load(dir.path()).is_err());
        dir.write(FILE, vec![b' '; MAX_BYTES as usize + 1]);
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("larger than"), "{err}");
    }

    #[test]
    fn the_legacy_keys_leave_config_toml_and_nothing_else_does() {
        let text = "# mine\nmodel = \"m\"\n[serve]\nauth_mode = \"token\" # keep\ntoken = \"abc\"\n  password_hash = '$2b$12$x'\n\n[tools]\ntoken = \"other\"\n";
        let stripped = strip_legacy_keys(text).unwrap();
        assert_eq!(
            stripped,
            "# mine\nmodel = \"m\"\n[serve]\nauth_mode = \"token\" # keep\n\n[tools]\ntoken = \"other\"\n"
        );
        let dotted = "serve.token = \"abc\"\nserve.behind_proxy = true\n";
        assert_eq!(
            strip_legacy_keys(dotted).unwrap(),
            "serve.behind_proxy = true\n"
        );
        // An inline `serve` table is left for the user to edit.
        assert_eq!(strip_legacy_keys("serve = { token = \"abc\" }\n"), None);
        assert_eq!(
            strip_legacy_keys("[serve]\ntoken = \"\"\"\nabc\"\"\"\n"),
            None
        );
    }
}
