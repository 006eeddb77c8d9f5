//! Integration tests, compiled into one binary. Each module drives the real `reasonix` binary
//! or the library's public surface.

mod util;

mod cli;
mod config;
mod permissions;
mod provider;
mod run;
mod sandbox;
mod tools_bash;
mod tools_files;
mod tools_search;
mod tui;
