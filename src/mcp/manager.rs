//! Running the configured MCP servers for one session: launch authorization for project
//! servers (grant, `--trust-project-mcp` or an interactive approval), parallel startup with
//! per-server timeouts, the [`McpHandle`] a run keeps (its tools for the registry, their
//! permission metadata, shutdown on drop), the [`ToolWatch`] that brings announced tool-list
//! changes to the agent before its next request, and the resolution of
//! `/mcp__<server>__<prompt>` commands and `@<server>:<uri>` references in user messages.
//!
//! A server that fails in any way costs its own tools and one notice; the run goes on.
//!
//! Stdio servers run in the jail bash uses (SPEC §3.3: "the process uses the server's writer
//! sandbox"): the configured backend and hidden paths, the reasonix home read-only, with the
//! server's own write roots (the workspace plus its `sandbox.allow_write`) and network switch
//! (on unless `sandbox = { network = false }`); see [`ServerJail`]. A server that fails to
//! start in the jail gets a hint naming the ways to give it room.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::adapter::{sanitize, tool_name, with_suffix, McpTool, RemoteTool};
use super::client::{CallOptions, Client, ClientOptions, ServerEvent, ServerInfo};
use super::config::{self, Endpoint, Origin, ServerSandbox, ServerSpec};
use super::content::{self, ToolOutput};
use super::grants::GrantStore;
use super::http::{HttpSpec, HttpTransport};
use super::log::Log;
use super::stdio::{StdioSpec, StdioTransport};
use super::transport::Transport;
use super::McpError;
use crate::agent::events::{Event, EventSink, NoticeLevel};
use crate::agent::runner::{ToolChange, ToolSource};
use crate::cancel::CancelToken;
use crate::config::Config;
use crate::permission::McpLookup;
use crate::sandbox::{BashMode, Jail, Policy, Settings};
use crate::tool::{Registry, Tool};

/// Launch approval is part of what the chat asks of MCP, so its types live with the others.
pub use crate::command::mcp::{LaunchAnswer, LaunchApprover, LaunchRequest};

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
    /// Where progress and log notifications go, for a UI that shows them.
    pub events: Option<Sender<ServerEvent>>,
    /// Start only this server (`reasonix mcp call`).
    pub only: Option<String>,
}

/// One connected server, shared by its tools.
pub struct Server {
    spec: ServerSpec,
    client: Client,
    info: ServerInfo,
    tools: Mutex<Vec<RemoteTool>>,
    /// Bumped whenever a listing differs from the one before.
    tools_generation: AtomicU64,
    log: Log,
}

/// What every server of a run shares at startup.
#[derive(Clone)]
pub struct Launch {
    /// The working directory of stdio servers.
    pub cwd: PathBuf,
    /// Provider key names, removed from stdio servers' environments unless their own `env`
    /// sets them.
    pub secrets: Vec<String>,
    /// The `[sandbox]` settings stdio servers are jailed with, or why they cannot be read
    /// (an unset variable in `forbid_read`): then only unjailed servers start.
    pub sandbox: Result<Settings, String>,
    pub client: ClientOptions,
}

impl Server {
    /// Starts the transport and runs the handshake and `tools/list` within the startup
    /// timeout.
    pub fn connect(spec: ServerSpec, launch: &Launch) -> Result<Server, McpError> {
        let started = Instant::now();
        let options = ClientOptions {
            name: spec.name.clone(),
            ..launch.client.clone()
        };
        let log = options.log.clone();
        let client = Client::start(options, |inbox| open_transport(&spec, launch, inbox))?;
        let failed = |err: McpError| with_jail_hint(with_diagnostics(err, &client), &spec);
        let info = client
            .initialize(&CallOptions::timeout(spec.startup_timeout))
            .map_err(failed)?;
        let remaining = spec
            .startup_timeout
            .checked_sub(started.elapsed())
            .unwrap_or_default();
        let listed = if info.has("tools") {
            client
                .list_tools(&CallOptions::timeout(remaining))
                .map_err(failed)?
        } else {
            Vec::new()
        };
        let server = Server {
            tools: Mutex::new(Vec::new()),
            tools_generation: AtomicU64::new(0),
            spec,
            client,
            info,
            log,
        };
        server.set_tools(&listed);
        Ok(server)
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }

    pub fn spec(&self) -> &ServerSpec {
        &self.spec
    }

    pub fn info(&self) -> &ServerInfo {
        &self.info
    }

    /// The tools as last listed.
    pub fn tools(&self) -> Vec<RemoteTool> {
        self.tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set_tools(&self, listed: &[Value]) {
        let mut tools = Vec::new();
        for value in listed {
            match RemoteTool::parse(value) {
                Some(tool) if tool.task_only => self.log(&format!(
                    "skipped tool `{}`: it can only run as a task",
                    tool.name
                )),
                Some(tool) => tools.push(tool),
                None => self.log("skipped a tool without a name"),
            }
        }
        let mut current = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        if *current != tools {
            *current = tools;
            self.tools_generation.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Changes whenever the listed tools change.
    pub fn tools_generation(&self) -> u64 {
        self.tools_generation.load(Ordering::SeqCst)
    }

    /// Lists the tools again if the server announced a change since the last listing.
    pub fn refresh_tools(&self, cancel: Option<&CancelToken>) -> Result<(), McpError> {
        if self.client.take_tools_stale() {
            let listed = self
                .client
                .list_tools(&self.options(cancel, self.spec.call_timeout))?;
            self.set_tools(&listed);
        }
        Ok(())
    }

    fn log(&self, line: &str) {
        self.log.line(self.name(), line);
    }

    fn options(&self, cancel: Option<&CancelToken>, timeout: Option<Duration>) -> CallOptions {
        CallOptions {
            timeout,
            cancel: cancel.cloned(),
        }
    }

    /// Calls a tool by its server-side name. A tool list the server announced as changed is
    /// fetched again first, so a tool it withdrew fails cleanly.
    pub fn call_tool(
        &self,
        tool: &str,
        arguments: &Value,
        cancel: &CancelToken,
    ) -> Result<ToolOutput, McpError> {
        let timeout = self.spec.tool_timeout(tool);
        self.refresh_tools(Some(cancel))?;
        if !self.tools().iter().any(|t| t.name == tool) {
            return Err(McpError::Protocol(format!(
                "the server no longer offers the tool `{tool}`"
            )));
        }
        let arguments = match arguments {
            Value::Null => Value::Object(Map::new()),
            other => other.clone(),
        };
        let result =
            self.client
                .call_tool(tool, &arguments, &self.options(Some(cancel), timeout))?;
        Ok(content::tool_result(&result))
    }

    /// `prompts/list` (empty when the server has no prompts).
    pub fn prompts(&self) -> Result<Vec<Value>, McpError> {
        self.client
            .list_optional("prompts", &self.options(None, self.spec.call_timeout))
    }

    /// `resources/list` (empty when the server has no resources).
    pub fn resources(&self) -> Result<Vec<Value>, McpError> {
        self.client
            .list_optional("resources", &self.options(None, self.spec.call_timeout))
    }

    /// `prompts/get`, rendered as the text of a user turn.
    pub fn get_prompt(
        &self,
        name: &str,
        arguments: &Map<String, Value>,
    ) -> Result<String, McpError> {
        let result =
            self.client
                .get_prompt(name, arguments, &self.options(None, self.spec.call_timeout))?;
        Ok(content::prompt_text(&result))
    }

    /// `resources/read`, as text.
    pub fn read_resource(&self, uri: &str) -> Result<String, McpError> {
        let result = self
            .client
            .read_resource(uri, &self.options(None, self.spec.call_timeout))?;
        Ok(content::resource_text(&result))
    }

    /// Closes the connection now, even while tools still hold the server.
    pub fn shutdown(&self) {
        self.client.shutdown();
    }
}

fn open_transport(
    spec: &ServerSpec,
    launch: &Launch,
    inbox: super::transport::Inbox,
) -> Result<Box<dyn Transport>, McpError> {
    match &spec.endpoint {
        Endpoint::Stdio { command, args, env } => {
            let named: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
            let sandbox = ServerJail::of(spec, &launch.sandbox)
                .map(|jail| jail.policy)
                .unwrap_or_else(|| Err("an HTTP server has no process to jail".into()))
                .map_err(|why| McpError::Start(format!("cannot set up its sandbox: {why}")))?;
            let stdio = StdioSpec {
                name: spec.name.clone(),
                program: command.clone(),
                args: args.clone(),
                cwd: launch.cwd.clone(),
                env: env.clone(),
                env_remove: launch
                    .secrets
                    .iter()
                    .filter(|n| !named.contains(&n.as_str()))
                    .cloned()
                    .collect(),
                sandbox,
            };
            Ok(Box::new(StdioTransport::spawn(&stdio, inbox)?))
        }
        Endpoint::Http { url, headers } => {
            let http = HttpSpec {
                name: spec.name.clone(),
                url: url.clone(),
                headers: headers.clone(),
                connect_timeout: spec.connect_timeout,
            };
            Ok(Box::new(HttpTransport::connect(http, inbox)?))
        }
    }
}

/// Adds the server's last stderr line to a startup error: usually the real reason.
fn with_diagnostics(err: McpError, client: &Client) -> McpError {
    let Some(last) = client.diagnostics().pop() else {
        return err;
    };
    let last = crate::text::one_line(&last, 200);
    match err {
        McpError::Closed(reason) => McpError::Closed(format!("{reason}; stderr: {last}")),
        McpError::Timeout { .. } | McpError::Protocol(_) => McpError::Start(format!(
            "{}; stderr: {last}",
            err.to_string().trim_start_matches("mcp: ")
        )),
        other => other,
    }
}

/// Says how to give a jailed stdio server room when it failed to start: a server that writes
/// its cache outside the workspace (`npx` into `~/.npm`) typically exits on the refused write,
/// and its last stderr line (added by [`with_diagnostics`]) shows which path it wanted.
fn with_jail_hint(err: McpError, spec: &ServerSpec) -> McpError {
    if !matches!(spec.endpoint, Endpoint::Stdio { .. }) || spec.sandbox == ServerSandbox::Off {
        return err;
    }
    let hint = format!(
        "it runs in the sandbox ({}); if it needs to write elsewhere (a cache such as \
         ~/.npm), add that directory to its `sandbox.allow_write`, or set `sandbox = \"off\"` \
         for it in the user config",
        spec.sandbox
    );
    match err {
        McpError::Closed(reason) => McpError::Closed(format!("{reason}; {hint}")),
        McpError::Timeout { .. } | McpError::Protocol(_) | McpError::Start(_) => McpError::Start(
            format!("{}; {hint}", err.to_string().trim_start_matches("mcp: ")),
        ),
        other => other,
    }
}

/// The sandbox of one stdio server: its configuration and the policy its process runs under.
#[derive(Debug, Clone)]
pub struct ServerJail {
    pub config: ServerSandbox,
    /// The base `[sandbox]` settings with the server's write roots and network switch; `Err`
    /// when the base settings could not be read.
    pub policy: Result<Arc<Policy>, String>,
}

impl ServerJail {
    /// `None` for HTTP servers, which are not our processes.
    pub fn of(spec: &ServerSpec, base: &Result<Settings, String>) -> Option<ServerJail> {
        if !matches!(spec.endpoint, Endpoint::Stdio { .. }) {
            return None;
        }
        let settings = match &spec.sandbox {
            // `BashMode` is the jail switch of a policy; `Off` runs the command as it is.
            ServerSandbox::Off => base.clone().map(|base| Settings {
                bash: BashMode::Off,
                ..base
            }),
            ServerSandbox::Jail {
                network,
                allow_write,
            } => base.clone().map(|base| Settings {
                allow_write: allow_write.clone(),
                network: *network,
                bash: BashMode::Enforce,
                ..base
            }),
        };
        let policy = match (&spec.sandbox, settings) {
            (_, Ok(settings)) => Ok(Arc::new(Policy::new(settings))),
            // Nothing to jail: the base settings do not matter.
            (ServerSandbox::Off, Err(_)) => Ok(Arc::new(Policy::workspace_only(Path::new("/")))),
            (_, Err(why)) => Err(why),
        };
        Some(ServerJail {
            config: spec.sandbox.clone(),
            policy,
        })
    }

    /// "bwrap, network on, writes: workspace" or "off". Selecting the backend probes the host
    /// (once per process), so only listings call this.
    pub fn describe(&self) -> String {
        let backend = match (&self.config, &self.policy) {
            (ServerSandbox::Off, _) => return "off".into(),
            (_, Ok(policy)) => match policy.jail() {
                Ok(Some(Jail::Bwrap(_))) => "bwrap",
                Ok(Some(Jail::Landlock(_))) => "landlock",
                Ok(None) | Err(_) => "unavailable",
            },
            (_, Err(_)) => "unavailable",
        };
        format!("{backend}, {}", self.config)
    }
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
    statuses: Vec<ServerStatus>,
    catalog: Arc<Mutex<Catalog>>,
}

/// The adapted tools of every server, shared by the handle, its [`ToolWatch`]es and the
/// gate's policy lookup so all of them see the same list.
#[derive(Default)]
struct Catalog {
    tools: Vec<Arc<McpTool>>,
    /// Each server's tool generation the list was adapted from.
    generations: Vec<u64>,
}

fn lock(catalog: &Mutex<Catalog>) -> MutexGuard<'_, Catalog> {
    catalog.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Re-adapts the catalog when a server's tools changed since it was built.
fn update_catalog(catalog: &Mutex<Catalog>, servers: &[Arc<Server>], generations: &[u64]) {
    let mut catalog = lock(catalog);
    if catalog.generations != generations {
        catalog.tools = adapt_tools(servers);
        catalog.generations = generations.to_vec();
    }
}

fn generations(servers: &[Arc<Server>]) -> Vec<u64> {
    servers.iter().map(|s| s.tools_generation()).collect()
}

/// Starts every configured server that may run, in parallel, and reports each failure as a
/// notice. Never fails: a run without its MCP servers is still a run.
pub fn start(
    config: &Config,
    cwd: &Path,
    options: McpOptions,
    sink: &mut dyn EventSink,
) -> McpHandle {
    let declared = config::declared(config, cwd);
    for problem in declared.problems {
        warn(sink, problem);
    }
    let grants = GrantStore::new(&config.home);
    let sandbox = Settings::from_config(config, cwd).map_err(|e| e.to_string());
    let mut handle = McpHandle::default();
    let mut launch = Vec::new();
    for spec in declared.servers {
        if options.only.as_ref().is_some_and(|only| *only != spec.name) {
            continue;
        }
        match authorize(&spec, cwd, &options, &grants, sink) {
            Ok(()) => launch.push(spec),
            Err(reason) => {
                warn(
                    sink,
                    format!("mcp: server `{}` was not started: {reason}", spec.name),
                );
                handle
                    .statuses
                    .push(status(&spec, &sandbox, ServerState::Skipped(reason)));
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
            log: Log::from_env(),
        },
    };
    for (spec, result) in connect_all(launch, &shared) {
        match result {
            Ok(server) => {
                let connected = status(&spec, &shared.sandbox, ServerState::Connected);
                handle.statuses.push(connected);
                handle.servers.push(Arc::new(server));
            }
            Err(err) => {
                let reason = err.to_string().trim_start_matches("mcp: ").to_string();
                warn(
                    sink,
                    format!(
                        "mcp: server `{}` failed to start: {reason}; its tools are unavailable",
                        spec.name
                    ),
                );
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

fn status(
    spec: &ServerSpec,
    sandbox: &Result<Settings, String>,
    state: ServerState,
) -> ServerStatus {
    ServerStatus {
        name: spec.name.clone(),
        transport: spec.transport_name(),
        origin: spec.origin,
        state,
        sandbox: ServerJail::of(spec, sandbox),
    }
}

fn warn(sink: &mut dyn EventSink, message: String) {
    sink.emit(Event::Notice {
        level: NoticeLevel::Warning,
        message,
    });
}

/// Whether a server may launch. User-installed servers always may; project servers need
/// `--trust-project-mcp`, a stored grant for this exact identity, or a yes from the user.
fn authorize(
    spec: &ServerSpec,
    cwd: &Path,
    options: &McpOptions,
    grants: &GrantStore,
    sink: &mut dyn EventSink,
) -> Result<(), String> {
    if !spec.origin.needs_grant() || options.trust_project {
        return Ok(());
    }
    let identity = spec.identity_hash();
    if grants.is_granted(cwd, &spec.name, &identity) {
        return Ok(());
    }
    let approver = options.approver.as_ref().filter(|_| options.interactive);
    let Some(approver) = approver else {
        return Err(format!(
            "it is declared in {} and has no launch grant for this workspace; approve it once \
             interactively or pass --trust-project-mcp",
            spec.origin.describe()
        ));
    };
    let request = LaunchRequest {
        server: spec.name.clone(),
        origin: spec.origin.describe().to_string(),
        transport: spec.transport_name().to_string(),
        detail: spec.launch_text(),
    };
    match approver.approve_launch(&request) {
        LaunchAnswer::Session => Ok(()),
        LaunchAnswer::Always => {
            if let Err(e) = grants.grant(cwd, &spec.name, &identity) {
                warn(
                    sink,
                    format!(
                        "mcp: could not save the grant for `{}` to {}: {e}",
                        spec.name,
                        grants.path().display()
                    ),
                );
            }
            Ok(())
        }
        LaunchAnswer::Deny => Err("the user declined to launch it".into()),
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
            Err(e) => {
                results[index] = Some(Err(McpError::Start(format!("cannot start a thread: {e}"))))
            }
        }
    }
    drop(tx);
    let deadline = Instant::now() + longest + STARTUP_SLACK;
    while outstanding > 0 {
        let wait = deadline.saturating_duration_since(Instant::now());
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

/// Brings tool-list changes to the agent: before each request it lists again the tools of
/// every server that sent `notifications/tools/list_changed`, and hands over the whole MCP
/// tool set when any server's list differs from what the agent has.
pub struct ToolWatch {
    servers: Vec<Arc<Server>>,
    /// The generations behind the tools the agent has.
    seen: Vec<u64>,
    catalog: Arc<Mutex<Catalog>>,
}

impl ToolSource for ToolWatch {
    fn poll(&mut self, cancel: &CancelToken, sink: &mut dyn EventSink) -> Option<ToolChange> {
        for server in &self.servers {
            match server.refresh_tools(Some(cancel)) {
                Ok(()) | Err(McpError::Cancelled) => {}
                Err(err) => warn(
                    sink,
                    format!(
                        "mcp: server `{}` announced new tools but listing them failed ({}); its previous tools stay",
                        server.name(),
                        err.to_string().trim_start_matches("mcp: ")
                    ),
                ),
            }
        }
        let current = generations(&self.servers);
        if current == self.seen {
            return None;
        }
        let origins = self
            .servers
            .iter()
            .zip(current.iter().zip(&self.seen))
            .filter(|(_, (now, seen))| now != seen)
            .map(|(server, _)| format!("MCP server `{}`", server.name()))
            .collect();
        update_catalog(&self.catalog, &self.servers, &current);
        self.seen = current;
        Some(ToolChange {
            prefix: "mcp__".into(),
            tools: lock(&self.catalog)
                .tools
                .iter()
                .map(|t| Arc::clone(t) as Arc<dyn Tool>)
                .collect(),
            origins,
        })
    }
}

/// A user message after MCP resolution.
#[derive(Debug, Clone, PartialEq)]
pub struct Expansion {
    pub text: String,
    /// References that could not be read; the message keeps them as typed.
    pub notices: Vec<String>,
}

/// An MCP prompt offered as a slash command.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptCommand {
    /// `mcp__<server>__<prompt>` (without the slash).
    pub command: String,
    pub server: String,
    pub prompt: String,
    pub description: String,
    /// Argument names in order, and whether each is required.
    pub arguments: Vec<(String, bool)>,
}

impl PromptCommand {
    fn usage(&self) -> String {
        let mut usage = format!("/{}", self.command);
        for (name, required) in &self.arguments {
            let name = name.to_ascii_uppercase();
            if *required {
                usage.push_str(&format!(" {name}"));
            } else {
                usage.push_str(&format!(" [{name}]"));
            }
        }
        usage
    }

    /// Positional words to named arguments; with a single argument the whole text is it, and
    /// words beyond the last argument join it.
    fn bind(&self, text: &str) -> Result<Map<String, Value>, McpError> {
        let mut bound = Map::new();
        let text = text.trim();
        if let [(name, _)] = self.arguments.as_slice() {
            if !text.is_empty() {
                bound.insert(name.clone(), Value::String(unquote(text)));
            }
        } else {
            let words = split_words(text);
            for (i, (name, _)) in self.arguments.iter().enumerate() {
                let value = if i + 1 == self.arguments.len() {
                    words
                        .get(i..)
                        .map(|rest| rest.join(" "))
                        .unwrap_or_default()
                } else {
                    words.get(i).cloned().unwrap_or_default()
                };
                if !value.is_empty() {
                    bound.insert(name.clone(), Value::String(value));
                }
            }
        }
        if let Some((missing, _)) = self
            .arguments
            .iter()
            .find(|(name, required)| *required && !bound.contains_key(name))
        {
            return Err(McpError::Config(format!(
                "the prompt needs the argument `{missing}`; usage: {}",
                self.usage()
            )));
        }
        Ok(bound)
    }
}

/// Words separated by whitespace; double quotes group words.
fn split_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let (mut quoted, mut any) = (false, false);
    for c in text.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any {
                    words.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            c => {
                word.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(word);
    }
    words
}

fn unquote(text: &str) -> String {
    match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Some(inner) => inner.to_string(),
        None => text.to_string(),
    }
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
            seen: lock(&self.catalog).generations.clone(),
            catalog: Arc::clone(&self.catalog),
        }
    }

    pub fn servers(&self) -> &[Arc<Server>] {
        &self.servers
    }

    pub fn server(&self, name: &str) -> Option<&Arc<Server>> {
        self.servers.iter().find(|s| s.name() == name)
    }

    /// Every declared server and how it fared, in declaration order of the launched ones
    /// after the skipped ones.
    pub fn statuses(&self) -> &[ServerStatus] {
        &self.statuses
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

    /// The prompts of every connected server as slash commands.
    pub fn prompt_commands(&self) -> Vec<PromptCommand> {
        let mut commands = Vec::new();
        for server in &self.servers {
            let Ok(prompts) = server.prompts() else {
                continue;
            };
            for prompt in prompts {
                let Some(name) = prompt.get("name").and_then(Value::as_str) else {
                    continue;
                };
                let arguments = prompt
                    .get("arguments")
                    .and_then(Value::as_array)
                    .map(|args| {
                        args.iter()
                            .filter_map(|a| {
                                let name = a.get("name")?.as_str()?;
                                let required = a.get("required").and_then(Value::as_bool);
                                Some((name.to_string(), required == Some(true)))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                commands.push(PromptCommand {
                    command: tool_name(server.name(), name),
                    server: server.name().to_string(),
                    prompt: name.to_string(),
                    description: prompt
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    arguments,
                });
            }
        }
        commands
    }

    /// Resolves a user message: a leading `/mcp__<server>__<prompt> ARGS` becomes the
    /// prompt's text, and each `@<server>:<uri>` naming a connected server with resources is
    /// read and prepended as `<resource ref="...">` block. An unknown or failing prompt
    /// command is an error (the message would mean nothing to the model); an unreadable
    /// resource is a notice.
    pub fn expand_message(&self, message: &str) -> Result<Expansion, McpError> {
        let text = match message.trim_start().strip_prefix("/mcp__") {
            Some(_) => self.run_prompt_command(message.trim_start())?,
            None => message.to_string(),
        };
        Ok(self.attach_resources(&text))
    }

    fn run_prompt_command(&self, message: &str) -> Result<String, McpError> {
        let (command, rest) = match message.find(char::is_whitespace) {
            Some(end) => (&message[1..end], &message[end..]),
            None => (&message[1..], ""),
        };
        let candidates: Vec<&Arc<Server>> = self
            .servers
            .iter()
            .filter(|s| command.starts_with(&format!("mcp__{}__", sanitize(s.name()))))
            .collect();
        if candidates.is_empty() {
            let connected: Vec<&str> = self.servers.iter().map(|s| s.name()).collect();
            return Err(McpError::Config(format!(
                "`/{command}` names no connected MCP server (connected: {})",
                if connected.is_empty() {
                    "none".to_string()
                } else {
                    connected.join(", ")
                }
            )));
        }
        let found = self
            .prompt_commands()
            .into_iter()
            .find(|c| c.command == command)
            .ok_or_else(|| {
                McpError::Config(format!(
                    "`/{command}` is not a prompt of a connected MCP server; `reasonix mcp list` shows them"
                ))
            })?;
        let arguments = found.bind(rest)?;
        let server = self
            .server(&found.server)
            .ok_or_else(|| McpError::Config(format!("server `{}` is gone", found.server)))?;
        server.get_prompt(&found.prompt, &arguments)
    }

    fn attach_resources(&self, text: &str) -> Expansion {
        let mut blocks = Vec::new();
        let mut notices = Vec::new();
        let mut seen = HashSet::new();
        for (server_name, uri) in resource_refs(text) {
            let Some(server) = self
                .server(&server_name)
                .filter(|s| s.info().has("resources"))
            else {
                continue;
            };
            let reference = format!("@{server_name}:{uri}");
            if !seen.insert(reference.clone()) {
                continue;
            }
            match server.read_resource(&uri) {
                Ok(body) => blocks.push(format!(
                    "<resource ref=\"{}\">\n{body}\n</resource>",
                    reference.replace('"', "%22")
                )),
                Err(err) => notices.push(format!(
                    "mcp: cannot read {reference}: {}",
                    err.to_string().trim_start_matches("mcp: ")
                )),
            }
        }
        let text = if blocks.is_empty() {
            text.to_string()
        } else {
            format!("{}\n\n{text}", blocks.join("\n"))
        };
        Expansion { text, notices }
    }
}

/// `@<server>:<uri>` references: `@` at the start or after whitespace or an opening bracket
/// or quote, a server name, a colon, and a URI up to the next whitespace (trailing
/// punctuation dropped).
pub fn resource_refs(text: &str) -> Vec<(String, String)> {
    let mut refs = Vec::new();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (i, &(at, c)) in chars.iter().enumerate() {
        if c != '@' {
            continue;
        }
        let starts_word = i == 0 || {
            let prev = chars[i - 1].1;
            prev.is_whitespace() || "([{\"'`".contains(prev)
        };
        if !starts_word {
            continue;
        }
        let rest = &text[at + 1..];
        let name_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || "_-.".contains(c)))
            .unwrap_or(rest.len());
        if name_len == 0 || !rest[name_len..].starts_with(':') {
            continue;
        }
        let uri_part = &rest[name_len + 1..];
        let uri_end = uri_part.find(char::is_whitespace).unwrap_or(uri_part.len());
        let uri = uri_part[..uri_end].trim_end_matches(|c: char| ".,;:!?)]}'\"`".contains(c));
        if !uri.is_empty() {
            refs.push((rest[..name_len].to_string(), uri.to_string()));
        }
    }
    refs
}

impl Drop for McpHandle {
    fn drop(&mut self) {
        let servers = std::mem::take(&mut self.servers);
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
    fn resource_references_are_found_where_words_start() {
        assert_eq!(
            resource_refs("see @docs:doc://style-guide, and (@x:file:///a/b.txt). mail me@host:1"),
            vec![
                ("docs".to_string(), "doc://style-guide".to_string()),
                ("x".to_string(), "file:///a/b.txt".to_string())
            ]
        );
        assert!(resource_refs("@ alone, @nocolon and @s: empty").is_empty());
    }

    fn command(arguments: &[(&str, bool)]) -> PromptCommand {
        PromptCommand {
            command: "mcp__s__p".into(),
            server: "s".into(),
            prompt: "p".into(),
            description: String::new(),
            arguments: arguments.iter().map(|(n, r)| (n.to_string(), *r)).collect(),
        }
    }

    #[test]
    fn prompt_arguments_bind_by_position() {
        let two = command(&[("city", true), ("state", false)]);
        let bound = two.bind(" \"San Francisco\" CA").unwrap();
        assert_eq!(bound["city"], "San Francisco");
        assert_eq!(bound["state"], "CA");
        let bound = two.bind("Paris").unwrap();
        assert_eq!(bound["city"], "Paris");
        assert!(!bound.contains_key("state"));
        let err = two.bind("  ").unwrap_err().to_string();
        assert!(
            err.contains("`city`") && err.contains("/mcp__s__p CITY [STATE]"),
            "{err}"
        );
        let one = command(&[("focus", false)]);
        assert_eq!(
            one.bind("error handling and tests").unwrap()["focus"],
            "error handling and tests"
        );
        let tail = command(&[("a", true), ("b", true)]);
        assert_eq!(tail.bind("x y z").unwrap()["b"], "y z");
    }
}
