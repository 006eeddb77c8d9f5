//! One connected MCP server: starting its transport (a jailed process or an HTTP endpoint),
//! the handshake and first tool listing within the startup timeout, and the calls a run makes
//! on it afterwards (tools, prompts, resources). A startup failure carries the server's last
//! stderr line and, for a jailed server, how to give it room.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::adapter::RemoteTool;
use super::client::{CallOptions, Client, ClientOptions, ServerInfo};
use super::config::{Endpoint, ServerSandbox, ServerSpec};
use super::content::{self, ToolOutput};
use super::elicit::{AcceptDefaults, Elicitor};
use super::http::{HttpSpec, HttpTransport};
use super::jail::{BaseSettings, ServerJail};
use super::log::Log;
use super::oauth::Authorizer;
use super::stdio::{StdioSpec, StdioTransport};
use super::transport::Transport;
use super::McpError;
use crate::cancel::CancelToken;

/// One connected server, shared by its tools.
pub struct Server {
    spec: ServerSpec,
    client: Client,
    info: ServerInfo,
    tools: Mutex<Vec<RemoteTool>>,
    /// Tools the server offers only as tasks, which reasonix cannot run.
    task_only: Mutex<Vec<String>>,
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
    pub sandbox: BaseSettings,
    /// `client.roots` is the workspace; each server's own roots follow its `roots` setting.
    pub client: ClientOptions,
    /// The reasonix home, where OAuth tokens are kept.
    pub home: PathBuf,
    /// The driving program's channel, for `type = "sdk"` servers (an Agent SDK session).
    pub host: Option<Arc<dyn super::host_channel::HostChannel>>,
}

impl Server {
    /// Starts the transport and runs the handshake and `tools/list` within the startup
    /// timeout.
    pub fn connect(spec: ServerSpec, launch: &Launch) -> Result<Server, McpError> {
        let started = Instant::now();
        let workspace = launch.client.roots.first().cloned().unwrap_or_default();
        let roots = spec.offered_roots(&workspace);
        // A person answers where one can; else the server's `elicitation` setting decides.
        let elicitor = launch.client.elicitor.clone().or_else(|| {
            spec.elicit_defaults
                .then(|| Arc::new(AcceptDefaults) as Arc<dyn Elicitor>)
        });
        let options = ClientOptions {
            name: spec.name.clone(),
            no_roots: roots.is_none(),
            roots: roots.unwrap_or_default(),
            elicitor,
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
            task_only: Mutex::new(Vec::new()),
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
        let mut task_only = Vec::new();
        for value in listed {
            match RemoteTool::parse(value) {
                Some(tool) if tool.task_only => {
                    self.log(&format!(
                        "skipped tool `{}`: it can only run as a task",
                        tool.name
                    ));
                    task_only.push(tool.name);
                }
                Some(tool) => tools.push(tool),
                None => self.log("skipped a tool without a name"),
            }
        }
        *self
            .task_only
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = task_only;
        let mut current = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        if *current != tools {
            *current = tools;
            self.tools_generation.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The tools listed as task-only (not offered to the model).
    pub fn task_only_tools(&self) -> Vec<String> {
        self.task_only
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
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
            let sandbox = match ServerJail::of(spec, &launch.sandbox).map(|jail| jail.policy) {
                Some(Ok(policy)) => policy,
                Some(Err(why)) => {
                    return Err(McpError::Start(format!("cannot set up its sandbox: {why}")))
                }
                // `ServerJail::of` gives every stdio server a jail.
                None => return Err(McpError::Start("a stdio server without a jail".into())),
            };
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
                auth: authorizer(spec, url, headers, &launch.home),
            };
            Ok(Box::new(HttpTransport::connect(http, inbox)?))
        }
        Endpoint::Host => match &launch.host {
            Some(channel) => Ok(Box::new(super::host_channel::HostTransport::new(
                &spec.name,
                Arc::clone(channel),
                inbox,
            ))),
            None => Err(McpError::Start(
                "a `sdk` server lives in the Claude Agent SDK's program and starts only in its \
                 session (`--input-format stream-json`)"
                    .into(),
            )),
        },
    }
}

/// OAuth for a server whose configured headers do not already authorize it.
fn authorizer(
    spec: &ServerSpec,
    url: &str,
    headers: &[(String, String)],
    home: &std::path::Path,
) -> Option<std::sync::Arc<Authorizer>> {
    if headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("authorization"))
    {
        return None;
    }
    Some(std::sync::Arc::new(Authorizer::new(
        &spec.name,
        url,
        spec.oauth.clone(),
        home,
    )))
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
