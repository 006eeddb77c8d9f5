//! Running the configured MCP servers for one session: parallel startup with per-server
//! timeouts after launch authorization (`launch`), and the [`McpHandle`] a run keeps: its
//! tools for the registry, their permission metadata, the [`ToolWatch`] for tool-list
//! changes, each declared server's status, and shutdown on drop.
//!
//! A server that fails in any way costs its own tools and one notice; the run goes on.

use std::collections::HashSet;
use std::path::Path;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::adapter::{tool_name, with_suffix, McpTool};
use super::client::{ClientOptions, ServerEvent};
use super::config::{self, Origin, ServerSpec};
use super::grants::GrantStore;
use super::jail::{BaseSettings, ServerJail};
use super::launch::{authorize, LaunchApprover};
use super::log::Log;
use super::login_later::{self, Late};
use super::server::{Launch, Server};
use super::watch::ToolWatch;
use super::McpError;
use crate::config::Config;
use crate::permission::McpLookup;
use crate::sandbox::Settings;
use crate::tool::{Registry, Tool};

/// Time granted beyond the longest startup timeout before a silent start is written off.
const STARTUP_SLACK: Duration = Duration::from_secs(2);

/// How a run starts its servers.
#[derive(Clone, Default)]
pub struct McpOptions {
    /// `--trust-project-mcp`: launch servers from project files without a grant.
    pub trust_project: bool,
    /// A person can answer launch approvals (requires `approver`).
    pub interactive: bool,
    pub approver: Option<Arc<dyn LaunchApprover>>,
    /// Where progress and log notifications go, for a UI that shows them. Without one, the
    /// warnings among them (a request for input declined because no one can answer) wait in
    /// the handle for [`McpHandle::unshown_warnings`] and the [`ToolWatch`] (at most
    /// `MAX_WAITING` between two looks).
    pub events: Option<Sender<ServerEvent>>,
    /// Start only this server (`reasonix mcp call`).
    pub only: Option<String>,
    /// Start only these servers (a bound agent composition's MCP selection): the others are
    /// not launched at all, whatever grants they hold.
    pub keep: Option<Vec<String>>,
    /// Who answers servers' requests for input; `None` declines them with a notice.
    pub elicitor: Option<Arc<dyn crate::mcp::elicit::Elicitor>>,
    /// A person is here to log in (the chat): a server that needs authorization gets the
    /// browser step in the background and joins the run once logged in.
    pub login: bool,
    /// The driving program's channel for `type = "sdk"` servers (an Agent SDK session).
    pub host: Option<Arc<dyn super::host_channel::HostChannel>>,
}

/// How one declared server fared.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerState {
    Connected,
    Failed(String),
    /// Not launched: a project server without a grant, or the user declined.
    Skipped(String),
}

#[derive(Debug, Clone)]
pub struct ServerStatus {
    pub name: String,
    pub transport: &'static str,
    pub origin: Origin,
    pub state: ServerState,
    /// `None` for HTTP servers.
    pub sandbox: Option<ServerJail>,
}

/// The servers of a run. Dropping it shuts every server down (in parallel).
#[derive(Default)]
pub struct McpHandle {
    servers: Vec<Arc<Server>>,
    /// Servers connected after a login in the background ([`login_later`]).
    late: Late,
    statuses: Vec<ServerStatus>,
    catalog: Arc<Mutex<Catalog>>,
    /// The servers' events when the run has no UI for them (`McpOptions::events` unset).
    unshown: Option<Unshown>,
}

/// The warnings of servers no UI shows (see [`ClientOptions::warnings`]), waiting for the
/// next look.
pub(super) type Unshown = Arc<Mutex<Receiver<ServerEvent>>>;

/// At most this many warnings wait between two looks; the MCP log keeps the rest.
const MAX_WAITING: usize = 32;

/// The warnings that waited in `unshown` since the last look, one notice line each.
pub(super) fn take_warnings(unshown: Option<&Unshown>) -> Vec<String> {
    let Some(unshown) = unshown else {
        return Vec::new();
    };
    let waiting = unshown.lock().unwrap_or_else(PoisonError::into_inner);
    waiting
        .try_iter()
        .filter_map(|event| match event {
            ServerEvent::Log {
                server,
                level,
                text,
            } => {
                let level = match level.as_str() {
                    "warning" => String::new(),
                    other => format!(" ({other})"),
                };
                Some(format!(
                    "mcp: server `{server}`{level}: {}",
                    crate::text::one_line(&text, 300)
                ))
            }
            ServerEvent::Progress { .. } => None,
        })
        .collect()
}

/// The adapted tools of every server, shared by the handle, its [`ToolWatch`]es and the
/// gate's policy lookup so all of them see the same list.
#[derive(Default)]
pub(super) struct Catalog {
    pub(super) tools: Vec<Arc<McpTool>>,
    /// Each server's tool generation the list was adapted from.
    pub(super) generations: Vec<u64>,
}

pub(super) fn lock(catalog: &Mutex<Catalog>) -> MutexGuard<'_, Catalog> {
    catalog.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Re-adapts the catalog when a server's tools changed since it was built.
pub(super) fn update_catalog(
    catalog: &Mutex<Catalog>,
    servers: &[Arc<Server>],
    generations: &[u64],
) {
    let mut catalog = lock(catalog);
    if catalog.generations != generations {
        catalog.tools = adapt_tools(servers);
        catalog.generations = generations.to_vec();
    }
}

pub(super) fn generations(servers: &[Arc<Server>]) -> Vec<u64> {
    servers.iter().map(|s| s.tools_generation()).collect()
}

/// Starts every configured server that may run, in parallel, and reports each failure as a
/// notice. Never fails: a run without its MCP servers is still a run.
pub fn start(
    config: &Config,
    cwd: &Path,
    options: McpOptions,
    warn: &mut dyn FnMut(String),
) -> McpHandle {
    let declared = config::declared(config, cwd);
    for problem in declared.problems {
        warn(problem);
    }
    let grants = GrantStore::new(&config.home);
    let sandbox = Settings::from_config(config, cwd).map_err(Arc::new);
    let mut handle = McpHandle::default();
    let mut warnings = None;
    if options.events.is_none() {
        let (tx, rx) = mpsc::sync_channel(MAX_WAITING);
        warnings = Some(tx);
        handle.unshown = Some(Arc::new(Mutex::new(rx)));
    }
    let mut launch = Vec::new();
    for spec in declared.servers {
        if options.only.as_ref().is_some_and(|only| *only != spec.name) {
            continue;
        }
        if options
            .keep
            .as_ref()
            .is_some_and(|keep| !keep.contains(&spec.name))
        {
            continue;
        }
        match authorize(&spec, cwd, &options, &grants, warn) {
            Ok(()) => launch.push(spec),
            Err(reason) => {
                warn(format!(
                    "mcp: server `{}` was not started: {reason}",
                    spec.name
                ));
                handle.statuses.push(status(
                    &spec,
                    &sandbox,
                    ServerState::Skipped(reason.to_string()),
                ));
            }
        }
    }
    let shared = Launch {
        cwd: cwd.to_path_buf(),
        secrets: config.secret_env_names(),
        sandbox,
        client: ClientOptions {
            name: String::new(),
            roots: vec![config::workspace_root(config, cwd)],
            events: options.events.clone(),
            warnings,
            log: Log::from_env(),
            elicitor: options.elicitor.clone(),
            ..ClientOptions::default()
        },
        home: config.home.clone(),
        host: options.host.clone(),
    };
    for (spec, result) in connect_all(launch, &shared) {
        match result {
            Ok(server) => {
                let connected = status(&spec, &shared.sandbox, ServerState::Connected);
                handle.statuses.push(connected);
                handle.servers.push(Arc::new(server));
            }
            Err(err) if options.login && login_later::wants_login(&spec, &err) => {
                warn(format!(
                    "mcp: server `{}` needs authorization: follow the link it shows to log in; \
                     its tools arrive once you have",
                    spec.name
                ));
                let waiting = ServerState::Failed("waiting for authorization".into());
                handle
                    .statuses
                    .push(status(&spec, &shared.sandbox, waiting));
                login_later::start(
                    spec,
                    shared.clone(),
                    Arc::clone(&handle.late),
                    options.events.clone(),
                );
            }
            Err(err) => {
                let reason = err.to_string().trim_start_matches("mcp: ").to_string();
                warn(format!(
                    "mcp: server `{}` failed to start: {reason}; its tools are unavailable",
                    spec.name
                ));
                handle
                    .statuses
                    .push(status(&spec, &shared.sandbox, ServerState::Failed(reason)));
            }
        }
    }
    update_catalog(
        &handle.catalog,
        &handle.servers,
        &generations(&handle.servers),
    );
    handle
}

fn status(spec: &ServerSpec, sandbox: &BaseSettings, state: ServerState) -> ServerStatus {
    ServerStatus {
        name: spec.name.clone(),
        transport: spec.transport_name(),
        origin: spec.origin,
        state,
        sandbox: ServerJail::of(spec, sandbox),
    }
}

/// Connects every server on its own thread and collects the results in declaration order.
pub fn connect_all(
    specs: Vec<ServerSpec>,
    launch: &Launch,
) -> Vec<(ServerSpec, Result<Server, McpError>)> {
    let longest = specs
        .iter()
        .map(|s| s.startup_timeout)
        .max()
        .unwrap_or_default();
    let (tx, rx) = mpsc::channel();
    let mut results: Vec<Option<Result<Server, McpError>>> = specs.iter().map(|_| None).collect();
    let mut outstanding = 0;
    for (index, spec) in specs.iter().enumerate() {
        let (tx, spec, launch) = (tx.clone(), spec.clone(), launch.clone());
        let spawned = std::thread::Builder::new()
            .name(super::thread_name(&spec.name, "start"))
            .spawn(move || {
                let result = Server::connect(spec, &launch);
                // A start that arrives after the deadline is dropped here, which shuts it down.
                let _ = tx.send((index, result));
            });
        match spawned {
            Ok(_) => outstanding += 1,
            Err(e) => results[index] = Some(Err(McpError::io("starting a thread", e))),
        }
    }
    drop(tx);
    // Saturating: a startup timeout no clock can hold waits without a deadline, never panics.
    let deadline = Instant::now().checked_add(longest.saturating_add(STARTUP_SLACK));
    while outstanding > 0 {
        let wait = match deadline {
            Some(deadline) => deadline.saturating_duration_since(Instant::now()),
            None => Duration::MAX,
        };
        match rx.recv_timeout(wait) {
            Ok((index, result)) => {
                results[index] = Some(result);
                outstanding -= 1;
            }
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
        }
    }
    specs
        .into_iter()
        .zip(results)
        .map(|(spec, result)| {
            let result = result.unwrap_or_else(|| {
                Err(McpError::Timeout {
                    method: "initialize".into(),
                    seconds: spec.startup_timeout.as_secs_f64(),
                })
            });
            (spec, result)
        })
        .collect()
}

/// Every remote tool of every server, with unique registry names.
fn adapt_tools(servers: &[Arc<Server>]) -> Vec<Arc<McpTool>> {
    let mut taken = HashSet::new();
    let mut tools = Vec::new();
    for server in servers {
        for remote in server.tools() {
            let mut name = tool_name(server.name(), &remote.name);
            if taken.contains(&name) {
                name = with_suffix(
                    &name,
                    &format!("{}\0{}\0{}", server.name(), remote.name, tools.len()),
                );
            }
            taken.insert(name.clone());
            tools.push(Arc::new(McpTool::new(name, remote, Arc::clone(server))));
        }
    }
    tools
}

impl McpHandle {
    /// Adds every remote tool to `registry`.
    pub fn register(&self, registry: &mut Registry) {
        for tool in self.tools() {
            registry.insert(tool as Arc<dyn Tool>);
        }
    }

    /// The remote tools as last listed.
    pub fn tools(&self) -> Vec<Arc<McpTool>> {
        lock(&self.catalog).tools.clone()
    }

    /// What the agent polls to see tool-list changes: it starts from the tools
    /// [`McpHandle::register`] gives out.
    pub fn tool_watch(&self) -> ToolWatch {
        ToolWatch {
            servers: self.servers.clone(),
            late: Arc::clone(&self.late),
            seen: lock(&self.catalog).generations.clone(),
            catalog: Arc::clone(&self.catalog),
            unshown: self.unshown.clone(),
        }
    }

    /// The warnings servers sent since the last look, for a run without a UI for server
    /// events (see [`McpOptions::events`]); empty when there is one.
    pub fn unshown_warnings(&self) -> Vec<String> {
        take_warnings(self.unshown.as_ref())
    }

    pub fn servers(&self) -> &[Arc<Server>] {
        &self.servers
    }

    /// Servers connected since startup by a login in the chat.
    fn late_servers(&self) -> Vec<Arc<Server>> {
        self.late
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A connected server by name, including one connected later by a login in the chat.
    pub fn server(&self, name: &str) -> Option<Arc<Server>> {
        self.servers
            .iter()
            .find(|s| s.name() == name)
            .cloned()
            .or_else(|| self.late_servers().into_iter().find(|s| s.name() == name))
    }

    /// Every declared server and how it fared, in declaration order of the launched ones
    /// after the skipped ones; a server that was waiting for a login and has connected since
    /// shows as connected.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        let late = self.late_servers();
        self.statuses
            .iter()
            .cloned()
            .map(|mut status| {
                if late.iter().any(|s| s.name() == status.name) {
                    status.state = ServerState::Connected;
                }
                status
            })
            .collect()
    }

    /// The permission metadata of every MCP tool, for `PolicyGate::with_mcp`; it follows
    /// tool-list changes.
    pub fn tool_policies(&self) -> McpLookup {
        let catalog = Arc::clone(&self.catalog);
        Box::new(move |name| {
            lock(&catalog)
                .tools
                .iter()
                .find(|t| t.name() == name)
                .map(|t| t.policy())
        })
    }
}

impl Drop for McpHandle {
    fn drop(&mut self) {
        let mut servers = std::mem::take(&mut self.servers);
        servers.extend(std::mem::take(
            &mut *self.late.lock().unwrap_or_else(PoisonError::into_inner),
        ));
        std::thread::scope(|scope| {
            for server in &servers {
                let spawned = std::thread::Builder::new()
                    .name(super::thread_name(server.name(), "stop"))
                    .spawn_scoped(scope, || server.shutdown());
                if spawned.is_err() {
                    server.shutdown();
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_without_a_ui_keeps_only_warnings_and_worse() {
        let (tx, rx) = mpsc::sync_channel(MAX_WAITING);
        let unshown: Unshown = Arc::new(Mutex::new(rx));
        let log = |level: &str, text: &str| ServerEvent::Log {
            server: "s".into(),
            level: level.into(),
            text: text.into(),
        };
        for event in [
            log("warning", "declined\na form"),
            log("error", "disk full"),
        ] {
            tx.send(event).unwrap();
        }
        assert_eq!(
            take_warnings(Some(&unshown)),
            [
                "mcp: server `s`: declined a form",
                "mcp: server `s` (error): disk full"
            ]
        );
        assert!(
            take_warnings(Some(&unshown)).is_empty(),
            "each is told once"
        );
        assert!(take_warnings(None).is_empty());
    }
}
