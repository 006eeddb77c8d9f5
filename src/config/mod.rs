//! Configuration: the TOML schema (`file`), layering built-in defaults < user config < project
//! `./reasonix.toml` < `--config` (`load`), model resolution into provider settings
//! (`resolve`), the bounds of every number in them (`limits`), the reasonix home and
//! per-project state paths (`paths`), and `${VAR}` expansion plus the `<home>/.env` key store
//! (`env`), which workspaces the user trusts to loosen their settings (`trust`), and adding an
//! allow rule to a file without disturbing it (`edit`), and Claude Code's own settings read
//! alongside (`claude`).
//!
//! Command-line flags sit above all of this; the `cli` layer applies them to the loaded
//! [`Config`]. Nothing here prints: problems that do not stop loading come back as warnings.

use std::fmt;
use std::io;
use std::path::PathBuf;

pub mod claude;
pub mod document;
pub mod edit;
pub mod env;
pub mod file;
pub mod limits;
pub mod load;
pub mod paths;
pub mod resolve;
pub mod trust;

pub use file::*;
pub use limits::*;
pub use load::{load, LoadOptions, Loaded};

#[derive(Debug)]
pub enum ConfigError {
    /// Neither `REASONIX_HOME` nor `HOME` is set.
    NoHome,
    /// `--config FILE` names a file that does not exist.
    MissingFile(PathBuf),
    Read {
        path: PathBuf,
        source: io::Error,
    },
    Write {
        path: PathBuf,
        source: io::Error,
    },
    /// A problem in one file; `location` is `path:line:col`, or just `path` when no position is
    /// known.
    At {
        location: String,
        message: String,
    },
    /// A problem not tied to one place in one file: model resolution, `${VAR}` expansion, a bad
    /// key name for the store.
    Invalid(String),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::NoHome => write!(
                f,
                "config: cannot find the reasonix home; set REASONIX_HOME or HOME"
            ),
            ConfigError::MissingFile(path) => write!(
                f,
                "config: --config file {} does not exist; check the path",
                path.display()
            ),
            ConfigError::Read { path, source } => {
                write!(f, "config: cannot read {}: {source}", path.display())
            }
            ConfigError::Write { path, source } => {
                write!(f, "config: cannot write {}: {source}", path.display())
            }
            ConfigError::At { location, message } => write!(f, "config: {location}: {message}"),
            ConfigError::Invalid(detail) => write!(f, "config: {detail}"),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfigError::Read { source, .. } | ConfigError::Write { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_line_and_prefixed() {
        let errors = [
            ConfigError::NoHome,
            ConfigError::MissingFile("/x.toml".into()),
            ConfigError::Read {
                path: "/a".into(),
                source: io::Error::other("boom"),
            },
            ConfigError::At {
                location: "/p/reasonix.toml:3:7".into(),
                message: "bad".into(),
            },
            ConfigError::Invalid("unknown model `x`".into()),
        ];
        for err in errors {
            let text = err.to_string();
            assert!(text.starts_with("config: "), "{text}");
            assert!(!text.contains('\n') && !text.ends_with('.'), "{text}");
        }
        let at = ConfigError::At {
            location: "/p/reasonix.toml:3:7".into(),
            message: "bad".into(),
        };
        assert_eq!(at.to_string(), "config: /p/reasonix.toml:3:7: bad");
    }
}
