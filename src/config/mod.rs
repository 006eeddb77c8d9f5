//! Configuration: the TOML schema, layering (defaults < user < project < --config < flags),
//! model resolution and the provider-key store.

use std::fmt;

#[derive(Debug)]
pub enum ConfigError {
    /// Placeholder until the loader lands; replaced by precise variants.
    Invalid(String),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Invalid(detail) => write!(f, "config: {detail}"),
        }
    }
}

impl std::error::Error for ConfigError {}
