//! Opening a workspace session, one path for every front end (`run`, the chat, `serve`,
//! Claude's print mode): the config layers and the workspace's trust, the model, the tool
//! registry, the MCP servers and their pinning, the composition binding, skills, hooks,
//! subagents and the permission gate. Each front end turns its flags into options; this layer
//! parses no flags and prints nothing: it returns values, reports through events, and fails
//! with its one [`Error`], which the front end says in its own way.

pub mod assemble;
pub mod binding;
pub mod build;
pub mod catalog_table;
pub mod conversation;
pub mod delegate;
mod error;
pub mod hooks;
pub mod open;
pub mod session_archive;
pub mod skills;
pub mod stream_json;
pub mod workspace;

pub use error::Error;
pub use open::{open, FrontEnd, Opened, ProfileRun, SessionOptions};
