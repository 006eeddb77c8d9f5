//! Terminal and process-signal plumbing. Only `sys` touches libc.

pub mod sanitize;
pub mod sys;
