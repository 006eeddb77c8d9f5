//! `reasonix serve`: the browser front end. An HTTP/1.1 server on `std::net` with a bounded
//! worker pool ([`server`]), its parser ([`http`]), authentication ([`auth`], [`bcrypt`] on
//! [`blowfish`], the stored credentials in [`auth_file`]), the routes and the embedded page ([`routes`]), the agent composition routes
//! ([`presets`]), the session export, import and move routes ([`archive_routes`]), the slash commands typed in the page ([`commands`]), the diffs of file edits ([`edits`]), and the live sessions,
//! each driving the same agent and event stream as the chat ([`sessions`]). What a session is
//! made of (config, tools, MCP servers, composition, provider) comes from the CLI through
//! [`Factory`].

pub mod archive_routes;
pub mod auth;
pub mod auth_file;
pub mod bcrypt;
mod blowfish;
pub mod commands;
pub mod edits;
pub mod history_view;
pub mod http;
pub mod presets;
pub mod routes;
pub mod server;
pub mod sessions;
mod subscriber;

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::Value;

use crate::agent::driver::Runner;
use crate::agent::session::Summary;
use crate::cancel::CancelToken;
use crate::command::Catalog as Commands;
use crate::composition::resolve::{Available, Binding};
use crate::composition::store::Catalog;
use crate::composition::CompositionError;
use crate::mcp::McpHost;
use crate::permission::{Approver, PolicyGate};
use crate::provider::{Prices, Provider};
use crate::tool::collab::Interact;

/// What a session is opened with: a stored one to resume (id, id prefix or path), or a new
/// one, optionally bound to an agent composition and on a model other than the default.
#[derive(Debug, Clone, Default)]
pub struct Open {
    pub resume: Option<String>,
    pub composition: Option<String>,
    pub model: Option<String>,
}

/// Why a session could not be opened: a composition refusal keeps its stable code.
#[derive(Debug)]
pub enum Refused {
    Composition(CompositionError),
    Other(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Composition(err) => write!(f, "{err}"),
            Refused::Other(message) => f.write_str(message),
        }
    }
}

/// A model to switch a session to, built and checked (its key is set) before it is sent to
/// the session's thread.
pub struct Switch {
    pub provider: Box<dyn Provider>,
    pub prices: Option<Prices>,
    /// `provider/model`.
    pub name: String,
}

/// Builds the agents the server's sessions run, the way the chat builds its own.
pub trait Factory: Send + Sync {
    /// A runner for `open`, whose gate asks `approver` and whose `ask`/plan reviews go to
    /// `interact`, with the MCP servers the user configured or granted.
    fn build(
        &self,
        open: &Open,
        approver: Box<dyn Approver>,
        interact: Arc<dyn Interact>,
    ) -> Result<Built, Refused>;
    /// The stored sessions of the workspace, newest first.
    fn stored(&self) -> Vec<Summary>;
    /// The models the user can pick, and the current one.
    fn models(&self) -> Value;
    /// A model by reference (`provider`, `model` or `provider/model`), ready to use.
    fn switch_model(&self, reference: &str) -> Result<Switch, String>;
    /// The declared MCP servers, with whether each may launch.
    fn mcp(&self) -> Value;
    /// The composition catalog of this workspace and what this machine offers to select.
    fn compositions(&self) -> (Catalog, Available);
    /// The reasonix home (`<home>/projects/<slug>/sessions` keeps the conversations).
    fn home(&self) -> std::path::PathBuf;
    /// The server's workspace, canonical.
    fn cwd(&self) -> std::path::PathBuf;
    /// Whether requests hold the provider-edit grant (`serve --allow-config-edits`): saving,
    /// deleting, importing and defaulting presets and choosing a conversation's composition
    /// need it, as configuration writes do.
    fn config_editing(&self) -> bool;
    /// The system prompt reasonix builds now for a conversation of `workspace` (with the
    /// persona of `binding`), which an imported archive is given in place of its own.
    fn system_prompt(
        &self,
        workspace: &std::path::Path,
        binding: Option<&Binding>,
    ) -> Result<String, String>;
}

/// A session's agent, the gate it asks (whose posture the page can switch), and what the
/// page's commands read: the command catalog, the MCP servers and their status, the
/// composition binding and the model.
pub struct Built {
    pub runner: Runner,
    pub gate: Arc<PolicyGate>,
    /// Built-ins, custom commands and MCP prompts, for what is typed in the page.
    pub commands: Commands,
    /// The session's MCP servers (prompts, resources); dropping the last handle stops them.
    pub mcp: Arc<dyn McpHost>,
    /// One entry per declared server: name, state, detail, tools.
    pub mcp_status: Value,
    pub binding: Option<Binding>,
    /// `provider/model`.
    pub model: String,
    /// The workspace `@path` mentions are read from.
    pub cwd: std::path::PathBuf,
}

/// The limits `reasonix serve` runs with: worker threads, of which some take authenticated
/// requests only, requests waiting for one per class (a full queue gets a 503), live
/// sessions, and event streams per session and in all. The caps on connections still sending
/// their head are in [`server`].
pub const WORKERS: usize = 16;
pub const RESERVED_WORKERS: usize = 4;
pub const QUEUE: usize = 64;
pub const MAX_SESSIONS: usize = 64;
pub const MAX_STREAMS_PER_SESSION: usize = 64;
pub const MAX_STREAMS: usize = 256;

pub struct Options {
    pub listen: SocketAddr,
    pub mode: auth::Mode,
    pub behind_proxy: bool,
    pub workers: usize,
    pub reserved_workers: usize,
    pub queue: usize,
    pub max_sessions: usize,
    pub max_streams_per_session: usize,
    pub max_streams: usize,
}

/// Refuses to serve without authentication beyond loopback.
pub fn check_listen(listen: &SocketAddr, mode: &auth::Mode) -> Result<(), String> {
    if matches!(mode, auth::Mode::None(_)) && !listen.ip().is_loopback() {
        return Err(format!(
            "refusing to serve {listen} without authentication: use --auth token or --auth password, or listen on 127.0.0.1"
        ));
    }
    Ok(())
}

/// A bound server, not yet serving.
pub struct Bound {
    listener: TcpListener,
    pub addr: SocketAddr,
}

pub fn bind(options: &Options) -> Result<Bound, String> {
    check_listen(&options.listen, &options.mode)?;
    let listener = TcpListener::bind(options.listen)
        .map_err(|e| format!("cannot listen on {}: {e}", options.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    Ok(Bound { listener, addr })
}

/// Serves until `stop` is cancelled (SIGINT/SIGTERM), then interrupts the turns and stops
/// the sessions, whose files are complete when this returns.
pub fn run(bound: Bound, options: Options, factory: Arc<dyn Factory>, stop: CancelToken) {
    let streams = sessions::Streams::new(options.max_streams_per_session, options.max_streams);
    let hub = Arc::new(sessions::Hub::new(factory, options.max_sessions, streams));
    let router = Arc::new(routes::Router {
        auth: auth::Auth::new(options.mode, options.behind_proxy),
        hub: Arc::clone(&hub),
    });
    let stopped = Arc::new(AtomicBool::new(false));
    let addr = bound.addr;
    let flag = Arc::clone(&stopped);
    let _guard = stop.on_cancel(move || {
        flag.store(true, Ordering::SeqCst);
        server::wake(addr);
    });
    let pinger = Arc::clone(&hub);
    let ping_stop = Arc::clone(&stopped);
    let _ = std::thread::Builder::new()
        .name("serve-ping".into())
        .spawn(move || {
            while !ping_stop.load(Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_secs(15));
                for live in pinger.all() {
                    live.ping();
                }
            }
        });
    let pool = server::Pool {
        workers: options.workers,
        reserved: options.reserved_workers,
        queue: options.queue,
    };
    server::serve(bound.listener, router, pool, stopped);
    hub.shutdown();
}
