//! Enforcement beneath the permission layer: child processes with deadlines and process-group
//! kills, and (later) path confinement and the OS jail for bash.
//!
//! - [`process`] owns every child the agent starts: how a [`process::CommandSpec`] becomes a
//!   command, the process group it runs in, the pipes drained on threads, the deadline, the
//!   output cap, and killing the whole group on timeout, cancel and drop. Tools describe what
//!   to run as a `CommandSpec`; a jail (bubblewrap, Landlock) will rewrite that spec before it
//!   is built, so no tool needs to know whether it runs confined.
//! - [`sys`] holds the few libc calls std lacks (new session, group kill, waiting without
//!   reaping, poll); it is the only module here with `unsafe`.
//!
//! Deciding whether a command may run at all is the permission layer's job, not this one's.

pub mod process;
pub mod sys;
