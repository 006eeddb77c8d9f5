//! Integration tests, compiled into one binary. Each module drives the real `reasonix` binary
//! or the library's public surface.

mod util;

mod bench;
mod cli;
mod commands;
mod compositions;
mod config;
mod context;
mod coordinator;
mod demo;
mod dist;
mod escapes;
mod fleet;
mod goal;
mod hardening;
mod hooks;
mod input;
mod language;
mod layers;
mod mcp;
mod mcp_oauth;
mod memory_ui;
mod output;
mod permissions;
mod plan;
mod provider;
mod provider_edges;
mod rewind;
mod run;
mod sandbox;
mod serve;
mod session_archive;
mod sessions;
mod skills;
mod subagent_manage;
mod subagents;
mod tools_bash;
mod tools_bounds;
mod tools_files;
mod tools_search;
mod trust;
mod tui;
mod tui_collab;
mod view_image;
mod workflow;
