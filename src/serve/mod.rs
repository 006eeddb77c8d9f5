//! `reasonix serve`: the browser front end. An HTTP/1.1 server on `std::net` with a bounded
//! worker pool ([`server`]), its parser ([`http`]), authentication ([`auth`], [`bcrypt`] on
//! [`blowfish`]), the routes and the embedded page ([`routes`]), and the live sessions, each
//! driving the same agent and event stream as the chat ([`sessions`]). What a session is made
//! of (config, tools, provider) comes from the CLI through [`Factory`].

pub mod auth;
pub mod bcrypt;
mod blowfish;
pub mod http;
pub mod routes;
pub mod server;
pub mod sessions;

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::Value;

use crate::agent::driver::Runner;
use crate::agent::session::Summary;
use crate::cancel::CancelToken;
use crate::permission::{Approver, PolicyGate};
use crate::tool::collab::Interact;

/// Builds the agents the server's sessions run, the way the chat builds its own.
pub trait Factory: Send + Sync {
    /// A runner for a new session (`resume` is `None`) or a stored one (id, id prefix or
    /// path), whose gate asks `approver` and whose `ask`/plan reviews go to `interact`.
    fn build(
        &self,
        resume: Option<&str>,
        approver: Box<dyn Approver>,
        interact: Arc<dyn Interact>,
    ) -> Result<Built, String>;
    /// The stored sessions of the workspace, newest first.
    fn stored(&self) -> Vec<Summary>;
    /// The models the user can pick, and the current one.
    fn models(&self) -> Value;
    /// The declared MCP servers.
    fn mcp(&self) -> Value;
}

/// A session's agent and the gate it asks, whose posture the page can switch.
pub struct Built {
    pub runner: Runner,
    pub gate: Arc<PolicyGate>,
}

pub struct Options {
    pub listen: SocketAddr,
    pub mode: auth::Mode,
    pub behind_proxy: bool,
    pub workers: usize,
    pub queue: usize,
    pub max_sessions: usize,
}

/// Refuses to serve without authentication beyond loopback.
pub fn check_listen(listen: &SocketAddr, mode: &auth::Mode) -> Result<(), String> {
    if matches!(mode, auth::Mode::None) && !listen.ip().is_loopback() {
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
    let hub = Arc::new(sessions::Hub::new(factory, options.max_sessions));
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
        queue: options.queue,
    };
    server::serve(bound.listener, router, pool, stopped);
    hub.shutdown();
}
