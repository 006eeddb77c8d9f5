//! Claude Code compatibility at the front: the Claude Agent SDK's control protocol
//! (`control*`). The print-mode front end (`reasonix -p`) lands beside it.

pub mod control;
pub mod control_approve;
pub mod control_calls;
pub mod control_hooks;
pub mod control_mcp;
pub mod control_session;
