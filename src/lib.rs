//! reasonix: a terminal coding agent for OpenAI-compatible chat models.
//!
//! The binary in `main.rs` is a thin shell over this library so integration tests and benches
//! can reach the same code paths the CLI uses.
//!
//! Unsafe code is confined to `sandbox::sys` and `term::sys`, the two modules allowed it.

#![deny(unsafe_code)]

pub mod agent;
pub mod app;
pub mod base64;
pub mod cancel;
pub mod claude;
pub mod cli;
pub mod clock;
pub mod command;
pub mod composition;
pub mod config;
pub mod fsutil;
pub mod hash;
pub mod i18n;
pub mod mcp;
pub mod permission;
pub mod platform;
pub mod provider;
pub mod sandbox;
pub mod serve;
pub mod skill;
pub mod term;
pub mod text;
pub mod tool;

/// The version string shown by `--version` and sent as `User-Agent`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The git commit the binary was built from, when the build could see one.
pub const GIT_COMMIT: Option<&str> = option_env!("REASONIX_GIT_COMMIT");

/// `reasonix/<version>`, the only identification we send to any server.
pub fn user_agent() -> String {
    format!("reasonix/{VERSION}")
}
