//! Which MCP servers a run knows about: `[[plugins]]` from the layered config, merged with the
//! project's `.mcp.json` (Claude Code's `mcpServers` schema; reasonix.toml wins a name clash),
//! with `${VAR}` and `${VAR:-default}` expanded in command, args, env, url and headers (see
//! [`Vars`] for where each entry's values come from).
//!
//! Each server comes out as a [`ServerSpec`] carrying where it was declared (project files need
//! a launch grant), its launch identity (what a grant is bound to), its timeouts, its approval
//! modes and its sandbox. A server that cannot be used (the legacy `sse` transport, an unset
//! variable, a malformed `.mcp.json`) is reported as a problem; the others still start.
//!
//! Sandbox settings follow trust: the user config may turn a server's jail off or give it more
//! write roots; a project file (`reasonix.toml`, `.mcp.json`) may only tighten it (turn its
//! network off). A loosening setting from a project file is ignored with a warning.
//!
//! Variables: the user's entries expand from the process environment and `<home>/.env`, never
//! from the workspace; project entries from the process environment (provider keys refused)
//! and the workspace's `.env` while the workspace is trusted with it as it is now. A value the
//! repository chose therefore never lands in the user's URL, headers or write roots.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use super::{oauth, McpError};
use std::time::Duration;

use serde_json::{json, Value};

use crate::config::env::{expand, parse_store};
use crate::config::{
    ApprovalMode, Config, ConfigError, Layer, PluginConfig, PluginJail, PluginSandbox, PluginType,
};
use crate::hash::sha256_hex;

/// The project file Claude Code reads, in the workspace root.
pub const MCP_JSON: &str = ".mcp.json";

/// How long an HTTP server may take to accept a connection, at most.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where a server was declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `<home>/config.toml` or `--config FILE`: authorized by the user who wrote it.
    User,
    /// `./reasonix.toml` in the workspace.
    ProjectToml,
    /// `./.mcp.json` in the workspace.
    McpJson,
}

impl Origin {
    /// Project files are written by whoever wrote the repository, so their servers need a
    /// launch grant before anything runs.
    pub fn needs_grant(self) -> bool {
        matches!(self, Origin::ProjectToml | Origin::McpJson)
    }

    pub fn describe(self) -> &'static str {
        match self {
            Origin::User => "user config",
            Origin::ProjectToml => "reasonix.toml",
            Origin::McpJson => ".mcp.json",
        }
    }
}

/// How to reach a server, with every `${VAR}` already expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// One usable server.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    pub name: String,
    pub origin: Origin,
    pub endpoint: Endpoint,
    pub startup_timeout: Duration,
    pub connect_timeout: Duration,
    /// Per-server cap; `None` = no cap.
    pub call_timeout: Option<Duration>,
    /// Per-tool caps by raw tool name; `None` = no cap for that tool.
    pub tool_timeouts: BTreeMap<String, Option<Duration>>,
    pub default_mode: ApprovalMode,
    /// Per-tool modes by raw tool name.
    pub tool_modes: BTreeMap<String, ApprovalMode>,
    /// How the process of a stdio server is confined (unused for HTTP servers).
    pub sandbox: ServerSandbox,
    /// `trusted_read_only_tools`: raw tool names the user audited as read-only, callable
    /// while planning. Only the user config may trust a tool.
    pub trusted_read_only: BTreeSet<String>,
    /// What `roots/list` offers this server.
    pub roots: Roots,
    /// `[plugins.oauth]`, expanded (HTTP servers only).
    pub oauth: oauth::Settings,
    /// `elicitation = "accept_defaults"`: headless requests for input are answered with their
    /// defaults instead of declined.
    pub elicit_defaults: bool,
}

/// The directories offered to a server through `roots/list`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Roots {
    /// The workspace plus every absolute directory named in the server's `args`, so a
    /// server started for `/data` is not told to stay inside the workspace instead.
    #[default]
    Default,
    /// Exactly these; none at all turns the roots capability off.
    Listed(Vec<PathBuf>),
}

impl ServerSpec {
    /// The roots offered, given the workspace; `None` when the capability is off.
    pub fn offered_roots(&self, workspace: &Path) -> Option<Vec<PathBuf>> {
        match &self.roots {
            Roots::Listed(list) if list.is_empty() => None,
            Roots::Listed(list) => Some(list.clone()),
            Roots::Default => {
                let mut roots = vec![workspace.to_path_buf()];
                if let Endpoint::Stdio { args, .. } = &self.endpoint {
                    for arg in args {
                        // `--root=/data` names a directory as much as `/data` does.
                        let candidate = arg.rsplit_once('=').map_or(arg.as_str(), |(_, v)| v);
                        let path = PathBuf::from(candidate);
                        if path.is_absolute() && path.is_dir() && !roots.contains(&path) {
                            roots.push(path);
                        }
                    }
                }
                Some(roots)
            }
        }
    }
}

/// The confinement of a stdio server's process, after the trust rules (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerSandbox {
    /// `sandbox = "off"` in the user config.
    Off,
    /// The jail bash uses (backend, hidden paths, read-only reasonix home), with these write
    /// roots beyond the workspace (expanded, relative ones taken against the workspace) and
    /// this network switch.
    Jail {
        network: bool,
        allow_write: Vec<PathBuf>,
    },
}

impl Default for ServerSandbox {
    fn default() -> ServerSandbox {
        ServerSandbox::Jail {
            network: true,
            allow_write: Vec::new(),
        }
    }
}

/// "network on, writes: workspace, /srv/cache" or "off", for `reasonix mcp list`; the
/// backend is the caller's to add, since it depends on the machine.
impl fmt::Display for ServerSandbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerSandbox::Off => f.write_str("off"),
            ServerSandbox::Jail {
                network,
                allow_write,
            } => {
                let network = if *network { "on" } else { "off" };
                write!(f, "network {network}, writes: workspace")?;
                for root in allow_write {
                    write!(f, ", {}", root.display())?;
                }
                Ok(())
            }
        }
    }
}

impl ServerSpec {
    pub fn transport_name(&self) -> &'static str {
        match self.endpoint {
            Endpoint::Stdio { .. } => "stdio",
            Endpoint::Http { .. } => "http",
        }
    }

    /// The timeout for one tool: its own, else the server's, else the global one.
    pub fn tool_timeout(&self, tool: &str) -> Option<Duration> {
        match self.tool_timeouts.get(tool) {
            Some(timeout) => *timeout,
            None => self.call_timeout,
        }
    }

    pub fn tool_mode(&self, tool: &str) -> ApprovalMode {
        self.tool_modes
            .get(tool)
            .copied()
            .unwrap_or(self.default_mode)
    }

    /// The launch identity: command, arguments and the *names* of the environment variables
    /// (values are often rotating secrets), or the URL. Canonical JSON, so it hashes stably.
    pub fn identity(&self) -> String {
        match &self.endpoint {
            Endpoint::Stdio { command, args, env } => {
                let names: BTreeSet<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
                json!({"command": command, "args": args, "env": names}).to_string()
            }
            Endpoint::Http { url, .. } => json!({ "url": url }).to_string(),
        }
    }

    pub fn identity_hash(&self) -> String {
        sha256_hex(self.identity().as_bytes())
    }

    /// What the user is asked to approve: the command line or the URL.
    pub fn launch_text(&self) -> String {
        match &self.endpoint {
            Endpoint::Stdio { command, args, env } => {
                let mut text = String::new();
                for (name, _) in env {
                    text.push_str(&format!("{name}=… "));
                }
                text.push_str(command);
                for arg in args {
                    text.push(' ');
                    text.push_str(arg);
                }
                text
            }
            Endpoint::Http { url, .. } => url.clone(),
        }
    }
}

/// The servers of a run and the problems that kept others out.
#[derive(Debug, Default)]
pub struct Declared {
    pub servers: Vec<ServerSpec>,
    /// One line each, naming the server and the fix: servers left out, and settings a
    /// project file may not make (ignored, the server still starts).
    pub problems: Vec<String>,
}

/// Why a `.mcp.json` does not follow Claude Code's `mcpServers` schema. It reads as the
/// detail after the file's path ("mcp: ./.mcp.json: …").
#[derive(Debug)]
pub enum McpJsonError {
    Invalid(serde_json::Error),
    /// `mcpServers` is not an object.
    ServersNotAnObject,
    /// One server's entry is not an object.
    ServerNotAnObject(String),
    /// One server's entry has a field of the wrong type.
    Server {
        name: String,
        source: serde_json::Error,
    },
}

impl fmt::Display for McpJsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McpJsonError::Invalid(err) => write!(f, "not valid JSON ({err}); fix the file"),
            McpJsonError::ServersNotAnObject => {
                write!(f, "`mcpServers` must be an object of servers by name")
            }
            McpJsonError::ServerNotAnObject(name) => write!(f, "server `{name}` must be an object"),
            McpJsonError::Server { name, source } => write!(f, "server `{name}`: {source}"),
        }
    }
}

impl std::error::Error for McpJsonError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            McpJsonError::Invalid(err) | McpJsonError::Server { source: err, .. } => Some(err),
            McpJsonError::ServersNotAnObject | McpJsonError::ServerNotAnObject(_) => None,
        }
    }
}

/// Why a declared server cannot be used. It reads as the detail after the server's name
/// ("mcp: server `x` (.mcp.json): …").
#[derive(Debug)]
pub enum ServerError {
    /// The legacy HTTP+SSE transport.
    SseUnsupported,
    /// A required field (`url`, `command`) is missing; the text says which.
    Missing(&'static str),
    /// `${NAME}` names a provider key and the server was declared by a project file.
    SecretRefused { name: String, origin: Origin },
    /// A `${VAR}` could not be expanded (unset without a default, malformed).
    Expansion(ConfigError),
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerError::SseUnsupported => write!(
                f,
                "type `sse` (the legacy HTTP+SSE transport) is not supported; use type `http` \
                 (streamable HTTP) with the server's MCP endpoint"
            ),
            ServerError::Missing(what) => write!(f, "{what}"),
            ServerError::SecretRefused { name, origin } => write!(
                f,
                "`${{{name}}}` names a provider key, which servers declared in {} may not read",
                origin.describe()
            ),
            ServerError::Expansion(err) => {
                let text = err.to_string();
                write!(f, "{}", text.strip_prefix("config: ").unwrap_or(&text))
            }
        }
    }
}

impl std::error::Error for ServerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServerError::Expansion(err) => Some(err),
            _ => None,
        }
    }
}

/// Everything needed to expand variables for a server. The user's entries read the process
/// environment and `<home>/.env`; project entries read the process environment and the
/// workspace's `.env`, the latter only while the workspace is trusted with that file as it is
/// now. So a repository (or a model that writes its `.env`) can never choose a value in the
/// user's own settings: not the URL their token goes to, not a write root of a jail.
struct Vars<'a> {
    /// `<home>/.env`: for the user's entries only.
    home_env: BTreeMap<String, String>,
    /// `./.env` in the workspace when trusted: non-provider variables, for project entries
    /// only.
    project_env: BTreeMap<String, String>,
    /// Provider key names: never taken from the project `.env`, and never expanded for
    /// servers a project file declared.
    secrets: &'a [String],
}

impl Vars<'_> {
    fn lookup(&self, name: &str, origin: Origin) -> Result<Option<String>, ServerError> {
        let secret = self.secrets.iter().any(|s| s == name);
        if secret && origin.needs_grant() {
            return Err(ServerError::SecretRefused {
                name: name.to_string(),
                origin,
            });
        }
        if let Ok(value) = std::env::var(name) {
            return Ok(Some(value));
        }
        if !origin.needs_grant() {
            return Ok(self.home_env.get(name).cloned());
        }
        Ok(self.project_env.get(name).cloned())
    }

    fn expand(&self, text: &str, origin: Origin) -> Result<String, ServerError> {
        let refused = std::cell::RefCell::new(None);
        let lookup = |name: &str| match self.lookup(name, origin) {
            Ok(value) => value,
            Err(reason) => {
                refused.borrow_mut().get_or_insert(reason);
                None
            }
        };
        let expanded = expand(text, &lookup).map_err(ServerError::Expansion);
        match refused.into_inner() {
            Some(reason) => Err(reason),
            None => expanded,
        }
    }
}

/// Collects the servers of `config` and `<cwd>/.mcp.json`.
pub fn declared(config: &Config, cwd: &Path) -> Declared {
    let mut declared = Declared::default();
    let secrets = config.secret_env_names();
    let trusted_env = crate::config::trust::TrustStore::for_session(config)
        .covers(cwd, crate::config::trust::Bound::DotEnv);
    let vars = Vars {
        home_env: crate::config::env::read_store(&config.home).unwrap_or_default(),
        project_env: if trusted_env {
            project_env(cwd, &secrets)
        } else {
            BTreeMap::new()
        },
        secrets: &secrets,
    };
    let mut entries: Vec<(PluginConfig, Origin)> = config
        .plugins
        .iter()
        .map(|p| (p.clone(), origin_of(p.origin)))
        .collect();
    match read_mcp_json(&cwd.join(MCP_JSON)) {
        Ok(from_json) => {
            for plugin in from_json {
                if !entries.iter().any(|(p, _)| p.name == plugin.name) {
                    entries.push((plugin, Origin::McpJson));
                }
            }
        }
        Err(problem) => declared.problems.push(problem.to_string()),
    }
    for (plugin, origin) in entries {
        let mut ignored = Vec::new();
        let resolved = resolve(&plugin, origin, config, &vars, &mut ignored);
        let about = |text: &str| {
            format!(
                "mcp: server `{}` ({}): {text}",
                plugin.name,
                origin.describe()
            )
        };
        declared.problems.extend(ignored.iter().map(|i| about(i)));
        match resolved {
            Ok(spec) => declared.servers.push(spec),
            Err(problem) => declared.problems.push(about(&problem.to_string())),
        }
    }
    declared
}

fn origin_of(layer: Layer) -> Origin {
    match layer {
        Layer::Project => Origin::ProjectToml,
        Layer::Builtin | Layer::User | Layer::Extra => Origin::User,
    }
}

fn project_env(cwd: &Path, secrets: &[String]) -> BTreeMap<String, String> {
    let mut vars = std::fs::read_to_string(cwd.join(".env"))
        .map(|text| parse_store(&text))
        .unwrap_or_default();
    vars.retain(|name, _| !secrets.contains(name) && !name.starts_with("REASONIX_"));
    vars
}

/// The servers of a `.mcp.json`; an absent file has none.
pub fn read_mcp_json(path: &Path) -> Result<Vec<PluginConfig>, McpError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(McpError::io(format!("cannot read {}", path.display()), e)),
    };
    parse_mcp_json(&text)
        .map_err(|detail| McpError::Config(format!("{}: {detail}", path.display())))
}

/// Keys of a Claude Code server entry; anything else (reasonix-only options such as approval
/// modes) is ignored, so a project file cannot loosen approvals through this route.
/// `sandbox` is kept so that a tightening (`network: false`) counts; what it may not loosen is
/// decided with the other trust rules in [`resolve`].
const MCP_JSON_KEYS: &[&str] = &[
    "type", "command", "args", "env", "url", "headers", "sandbox",
];

pub fn parse_mcp_json(text: &str) -> Result<Vec<PluginConfig>, McpJsonError> {
    let value: Value = serde_json::from_str(text).map_err(McpJsonError::Invalid)?;
    let Some(servers) = value.get("mcpServers") else {
        return Ok(Vec::new());
    };
    let Value::Object(servers) = servers else {
        return Err(McpJsonError::ServersNotAnObject);
    };
    let mut plugins = Vec::new();
    for (name, entry) in servers {
        let Value::Object(fields) = entry else {
            return Err(McpJsonError::ServerNotAnObject(name.clone()));
        };
        let mut kept: serde_json::Map<String, Value> = fields
            .iter()
            .filter(|(k, _)| MCP_JSON_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        // Claude Code infers a remote server from a bare `url`.
        if !kept.contains_key("type") && kept.contains_key("url") && !kept.contains_key("command") {
            kept.insert("type".into(), json!("http"));
        }
        kept.insert("name".into(), json!(name));
        let plugin: PluginConfig =
            serde_json::from_value(Value::Object(kept)).map_err(|source| McpJsonError::Server {
                name: name.clone(),
                source,
            })?;
        plugins.push(plugin);
    }
    Ok(plugins)
}

/// The usable server of `plugin`; settings ignored under the trust rules are added to
/// `ignored`, one sentence each.
fn resolve(
    plugin: &PluginConfig,
    origin: Origin,
    config: &Config,
    vars: &Vars,
    ignored: &mut Vec<String>,
) -> Result<ServerSpec, ServerError> {
    let endpoint = match plugin.kind {
        PluginType::Sse => return Err(ServerError::SseUnsupported),
        PluginType::Http | PluginType::StreamableHttp => {
            let url = plugin
                .url
                .as_deref()
                .filter(|u| !u.trim().is_empty())
                .ok_or(ServerError::Missing("a remote server needs `url`"))?;
            let mut headers = Vec::new();
            for (name, value) in &plugin.headers {
                headers.push((name.clone(), vars.expand(value, origin)?));
            }
            Endpoint::Http {
                url: vars.expand(url, origin)?,
                headers,
            }
        }
        PluginType::Stdio => {
            let command = plugin
                .command
                .as_deref()
                .filter(|c| !c.trim().is_empty())
                .ok_or(ServerError::Missing("a stdio server needs `command`"))?;
            let mut args = Vec::new();
            for arg in &plugin.args {
                args.push(vars.expand(arg, origin)?);
            }
            let mut env = Vec::new();
            for (name, value) in &plugin.env {
                env.push((name.clone(), vars.expand(value, origin)?));
            }
            Endpoint::Stdio {
                command: vars.expand(command, origin)?,
                args,
                env,
            }
        }
    };
    let global = seconds(config.tools.mcp_call_timeout_seconds);
    let call_timeout = match plugin.call_timeout_seconds {
        Some(n) if n > 0 => seconds(n),
        _ => global,
    };
    let startup_timeout = Duration::from_secs(
        plugin
            .startup_timeout_seconds
            .clamp(1, crate::config::MAX_TIMEOUT_SECONDS),
    );
    Ok(ServerSpec {
        name: plugin.name.clone(),
        origin,
        endpoint,
        startup_timeout,
        connect_timeout: CONNECT_TIMEOUT.min(startup_timeout),
        call_timeout,
        tool_timeouts: plugin
            .tool_timeout_seconds
            .iter()
            .map(|(tool, secs)| (tool.clone(), seconds(*secs)))
            .collect(),
        default_mode: default_mode(plugin, origin),
        tool_modes: plugin
            .tools
            .iter()
            .filter_map(|(tool, c)| c.approval_mode.map(|m| (tool.clone(), cap_mode(m, origin))))
            .collect(),
        sandbox: sandbox(plugin, origin, vars, ignored)?,
        trusted_read_only: trusted_read_only(plugin, origin, ignored),
        roots: roots(plugin, origin, vars, ignored)?,
        oauth: oauth_settings(plugin, origin, vars)?,
        elicit_defaults: elicit_defaults(plugin, origin, ignored)?,
    })
}

/// `elicitation`: answering for the user is theirs to allow, so a project file cannot.
fn elicit_defaults(
    plugin: &PluginConfig,
    origin: Origin,
    ignored: &mut Vec<String>,
) -> Result<bool, ServerError> {
    match plugin.elicitation.as_deref() {
        None | Some("decline") => Ok(false),
        Some("accept_defaults") if origin.needs_grant() => {
            ignored.push(
                "`elicitation` is ignored: only the user config may accept requests for input \
                 on your behalf"
                    .into(),
            );
            Ok(false)
        }
        Some("accept_defaults") => Ok(true),
        Some(_) => Err(ServerError::Missing(
            "`elicitation` must be \"decline\" or \"accept_defaults\"",
        )),
    }
}

/// `roots`: a project file may turn them off (`[]`) but not point the server elsewhere.
fn roots(
    plugin: &PluginConfig,
    origin: Origin,
    vars: &Vars,
    ignored: &mut Vec<String>,
) -> Result<Roots, ServerError> {
    let Some(list) = &plugin.roots else {
        return Ok(Roots::Default);
    };
    if origin.needs_grant() && !list.is_empty() {
        ignored.push(
            "`roots` is ignored: only the user config may offer a server other directories \
             (a project file may set `roots = []`)"
                .into(),
        );
        return Ok(Roots::Default);
    }
    let mut roots = Vec::new();
    for root in list {
        roots.push(PathBuf::from(vars.expand(root, origin)?));
    }
    Ok(Roots::Listed(roots))
}

/// `[plugins.oauth]` with `${VAR}` expanded; the default is the authorization code flow.
fn oauth_settings(
    plugin: &PluginConfig,
    origin: Origin,
    vars: &Vars,
) -> Result<oauth::Settings, ServerError> {
    let Some(table) = &plugin.oauth else {
        return Ok(oauth::Settings {
            grant: oauth::AUTHORIZATION_CODE.into(),
            ..oauth::Settings::default()
        });
    };
    let expand = |value: &Option<String>| -> Result<Option<String>, ServerError> {
        match value {
            Some(text) => Ok(Some(vars.expand(text, origin)?).filter(|v| !v.is_empty())),
            None => Ok(None),
        }
    };
    let grant = match table.grant.as_deref() {
        None | Some("authorization_code") => oauth::AUTHORIZATION_CODE,
        Some("client_credentials") => oauth::CLIENT_CREDENTIALS,
        Some("jwt_bearer") => oauth::JWT_BEARER,
        Some(_) => {
            return Err(ServerError::Missing(
                "`oauth.grant` must be \"authorization_code\", \"client_credentials\" or \
                 \"jwt_bearer\"",
            ))
        }
    };
    Ok(oauth::Settings {
        client_id: expand(&table.client_id)?,
        client_secret: expand(&table.client_secret)?,
        client_metadata_url: expand(&table.client_metadata_url)?,
        grant: grant.to_string(),
        scopes: table.scopes.clone(),
        callback_port: table.callback_port.unwrap_or(0),
        private_key: expand(&table.private_key)?,
        signing_algorithm: expand(&table.signing_algorithm)?,
        idp_token_endpoint: expand(&table.idp_token_endpoint)?,
        idp_client_id: expand(&table.idp_client_id)?,
        id_token: expand(&table.id_token)?,
    })
}

/// The tools trusted as read-only while planning: a repository cannot vouch for its own
/// server, so a project file's list is ignored.
fn trusted_read_only(
    plugin: &PluginConfig,
    origin: Origin,
    ignored: &mut Vec<String>,
) -> BTreeSet<String> {
    if origin.needs_grant() && !plugin.trusted_read_only_tools.is_empty() {
        ignored.push(
            "`trusted_read_only_tools` is ignored: only the user config may trust a tool as \
             read-only"
                .into(),
        );
        return BTreeSet::new();
    }
    plugin.trusted_read_only_tools.iter().cloned().collect()
}

/// The server's sandbox: as configured when the user wrote it; from a project file, only what
/// tightens the default jail.
fn sandbox(
    plugin: &PluginConfig,
    origin: Origin,
    vars: &Vars,
    ignored: &mut Vec<String>,
) -> Result<ServerSandbox, ServerError> {
    let jail = match &plugin.sandbox {
        None => return Ok(ServerSandbox::default()),
        Some(PluginSandbox::Off) if origin.needs_grant() => {
            ignored.push(
                "`sandbox = \"off\"` is ignored: only the user config may loosen a server's \
                 sandbox; the server runs in the jail"
                    .into(),
            );
            return Ok(ServerSandbox::default());
        }
        Some(PluginSandbox::Off) => return Ok(ServerSandbox::Off),
        Some(PluginSandbox::Jail(jail)) => jail,
    };
    let PluginJail {
        network,
        allow_write,
    } = jail;
    let mut roots = Vec::new();
    if origin.needs_grant() && !allow_write.is_empty() {
        ignored.push(
            "`sandbox.allow_write` is ignored: only the user config may give a server more \
             write roots"
                .into(),
        );
    } else {
        for root in allow_write {
            roots.push(PathBuf::from(vars.expand(root, origin)?));
        }
    }
    Ok(ServerSandbox::Jail {
        network: network.unwrap_or(true),
        allow_write: roots,
    })
}

/// A timeout in seconds, 0 for none, held to a day: the values also come from compositions.
fn seconds(secs: u64) -> Option<Duration> {
    (secs > 0).then(|| Duration::from_secs(secs.min(crate::config::MAX_TIMEOUT_SECONDS)))
}

/// With no explicit mode, servers the user installed default to `approve`, servers from
/// project files to `auto` (the ordinary permission decision).
fn default_mode(plugin: &PluginConfig, origin: Origin) -> ApprovalMode {
    match plugin.default_tools_approval_mode {
        Some(mode) => cap_mode(mode, origin),
        None if origin.needs_grant() => ApprovalMode::Auto,
        None => ApprovalMode::Approve,
    }
}

/// A project file may tighten approvals but not waive them.
fn cap_mode(mode: ApprovalMode, origin: Origin) -> ApprovalMode {
    match mode {
        ApprovalMode::Approve if origin.needs_grant() => ApprovalMode::Auto,
        other => other,
    }
}

/// The workspace root offered to servers through `roots/list`.
pub fn workspace_root(config: &Config, cwd: &Path) -> PathBuf {
    config
        .sandbox
        .workspace_root
        .clone()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| cwd.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugin(toml_text: &str) -> PluginConfig {
        toml::from_str(toml_text).unwrap()
    }

    fn vars(secrets: &[String]) -> Vars<'_> {
        Vars {
            home_env: [("FROM_HOME_ENV".to_string(), "home".to_string())]
                .into_iter()
                .collect(),
            project_env: [("FROM_DOTENV".to_string(), "dot".to_string())]
                .into_iter()
                .collect(),
            secrets,
        }
    }

    #[test]
    fn mcp_json_follows_claude_codes_schema() {
        let servers = parse_mcp_json(
            r#"{"mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "server-fs"], "env": {"A": "1"}},
                "stripe": {"type": "http", "url": "https://mcp.stripe.com", "headers": {"Authorization": "Bearer ${K}"}},
                "bare": {"url": "https://x.example/mcp"},
                "legacy": {"type": "sse", "url": "https://old.example/sse"},
                "sneaky": {"command": "x", "default_tools_approval_mode": "approve"}
            }}"#,
        )
        .unwrap();
        let by_name = |n: &str| servers.iter().find(|p| p.name == n).unwrap();
        assert_eq!(by_name("fs").kind, PluginType::Stdio);
        assert_eq!(by_name("fs").args, ["-y", "server-fs"]);
        assert_eq!(by_name("stripe").kind, PluginType::Http);
        assert_eq!(by_name("bare").kind, PluginType::Http);
        assert_eq!(by_name("legacy").kind, PluginType::Sse);
        assert_eq!(by_name("sneaky").default_tools_approval_mode, None);
        assert!(parse_mcp_json("{}").unwrap().is_empty());
        let err = parse_mcp_json("{\"mcpServers\": [1]}").unwrap_err();
        assert_eq!(
            err.to_string(),
            "`mcpServers` must be an object of servers by name"
        );
        let err = parse_mcp_json("{oops").unwrap_err();
        assert!(err.to_string().starts_with("not valid JSON ("), "{err}");
        assert!(std::error::Error::source(&err).is_some());
    }

    #[test]
    fn variables_expand_everywhere_and_provider_keys_stay_with_the_user() {
        std::env::set_var("REASONIX_TEST_MCP_TOKEN", "tok");
        let config = Config::default();
        let secrets = vec!["REASONIX_TEST_MCP_TOKEN".to_string()];
        let v = vars(&secrets);
        let p = plugin(
            "name = \"s\"\ncommand = \"${FROM_HOME_ENV}/bin\"\nargs = [\"--x=${MISSING:-d}\"]\nenv = { T = \"${REASONIX_TEST_MCP_TOKEN}\" }\n",
        );
        let spec = resolve(&p, Origin::User, &config, &v, &mut Vec::new()).unwrap();
        assert_eq!(
            spec.endpoint,
            Endpoint::Stdio {
                command: "home/bin".into(),
                args: vec!["--x=d".into()],
                env: vec![("T".into(), "tok".into())]
            }
        );
        let err = resolve(&p, Origin::McpJson, &config, &v, &mut Vec::new()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "`${REASONIX_TEST_MCP_TOKEN}` names a provider key, which servers declared in .mcp.json may not read"
        );
        let http =
            plugin("name = \"h\"\ntype = \"http\"\nurl = \"http://127.0.0.1:${PORT_UNSET}/mcp\"\n");
        let err = resolve(&http, Origin::User, &config, &v, &mut Vec::new())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("PORT_UNSET") && !err.starts_with("config:"),
            "{err}"
        );
        // Each side reads only its own `.env`: the user's entries `<home>/.env`, a project's
        // entries the workspace's.
        let from = |text: &str, origin: Origin| match resolve(
            &plugin(text),
            origin,
            &config,
            &v,
            &mut Vec::new(),
        ) {
            Ok(spec) => match spec.endpoint {
                Endpoint::Stdio { command, .. } => command,
                Endpoint::Http { url, .. } => url,
            },
            Err(err) => err.to_string(),
        };
        let dot = "name = \"s\"\ncommand = \"${FROM_DOTENV:-none}\"\n";
        let home = "name = \"s\"\ncommand = \"${FROM_HOME_ENV:-none}\"\n";
        assert_eq!(from(dot, Origin::User), "none");
        assert_eq!(from(dot, Origin::McpJson), "dot");
        assert_eq!(from(home, Origin::ProjectToml), "none");
        let sse = plugin("name = \"l\"\ntype = \"sse\"\nurl = \"http://x/sse\"\n");
        let err = resolve(&sse, Origin::User, &config, &v, &mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains("use type `http`"), "{err}");
    }

    #[test]
    fn identity_covers_command_args_and_env_names_but_not_values() {
        let config = Config::default();
        let secrets = Vec::new();
        let v = vars(&secrets);
        let spec = |text: &str| {
            resolve(&plugin(text), Origin::McpJson, &config, &v, &mut Vec::new()).unwrap()
        };
        let a = spec("name = \"s\"\ncommand = \"srv\"\nargs = [\"a\"]\nenv = { K = \"1\" }\n");
        let same = spec("name = \"s\"\ncommand = \"srv\"\nargs = [\"a\"]\nenv = { K = \"2\" }\n");
        let other_arg =
            spec("name = \"s\"\ncommand = \"srv\"\nargs = [\"b\"]\nenv = { K = \"1\" }\n");
        let other_env =
            spec("name = \"s\"\ncommand = \"srv\"\nargs = [\"a\"]\nenv = { J = \"1\" }\n");
        assert_eq!(a.identity_hash(), same.identity_hash());
        assert_ne!(a.identity_hash(), other_arg.identity_hash());
        assert_ne!(a.identity_hash(), other_env.identity_hash());
        assert_eq!(a.launch_text(), "K=… srv a");
    }

    #[test]
    fn timeouts_and_modes_resolve_by_precedence() {
        let mut config = Config::default();
        config.tools.mcp_call_timeout_seconds = 300;
        let secrets = Vec::new();
        let v = vars(&secrets);
        let p = plugin(
            "name = \"s\"\ncommand = \"x\"\ncall_timeout_seconds = 600\ntool_timeout_seconds = { slow = 1800, free = 0 }\ntools = { rm = { approval_mode = \"prompt\" }, ok = { approval_mode = \"approve\" } }\n",
        );
        let user = resolve(&p, Origin::User, &config, &v, &mut Vec::new()).unwrap();
        assert_eq!(user.tool_timeout("slow"), Some(Duration::from_secs(1800)));
        assert_eq!(user.tool_timeout("free"), None);
        assert_eq!(user.tool_timeout("other"), Some(Duration::from_secs(600)));
        assert_eq!(user.tool_mode("rm"), ApprovalMode::Prompt);
        assert_eq!(user.tool_mode("other"), ApprovalMode::Approve);
        let project = resolve(&p, Origin::ProjectToml, &config, &v, &mut Vec::new()).unwrap();
        assert_eq!(project.tool_mode("other"), ApprovalMode::Auto);
        assert_eq!(
            project.tool_mode("ok"),
            ApprovalMode::Auto,
            "projects cannot waive approval"
        );
        let plain = resolve(
            &plugin("name = \"s\"\ncommand = \"x\"\n"),
            Origin::User,
            &config,
            &v,
            &mut Vec::new(),
        )
        .unwrap();
        assert_eq!(plain.tool_timeout("any"), Some(Duration::from_secs(300)));
        assert_eq!(plain.startup_timeout, Duration::from_secs(30));
    }

    #[test]
    fn roots_default_to_the_workspace_and_the_servers_own_directories() {
        let config = Config::default();
        let secrets = Vec::new();
        let v = vars(&secrets);
        let data = std::env::temp_dir();
        let text = format!(
            "name = \"fs\"\ncommand = \"x\"\nargs = [\"-y\", \"server-fs\", {:?}, \"--root={}\", \"/no/such/dir\"]\n",
            data.display().to_string(),
            data.display()
        );
        let spec = resolve(&plugin(&text), Origin::User, &config, &v, &mut Vec::new()).unwrap();
        let workspace = Path::new("/w");
        assert_eq!(
            spec.offered_roots(workspace),
            Some(vec![workspace.to_path_buf(), data.clone()])
        );
        let off = plugin(&format!("{text}roots = []\n"));
        let spec = resolve(&off, Origin::McpJson, &config, &v, &mut Vec::new()).unwrap();
        assert_eq!(
            spec.offered_roots(workspace),
            None,
            "a project may turn roots off"
        );
        let listed = plugin(&format!("{text}roots = [\"/srv\"]\n"));
        let spec = resolve(&listed, Origin::User, &config, &v, &mut Vec::new()).unwrap();
        assert_eq!(
            spec.offered_roots(workspace),
            Some(vec![PathBuf::from("/srv")])
        );
        let mut ignored = Vec::new();
        let spec = resolve(&listed, Origin::ProjectToml, &config, &v, &mut ignored).unwrap();
        assert_eq!(spec.roots, Roots::Default);
        assert!(ignored[0].contains("`roots` is ignored"), "{ignored:?}");
    }

    #[test]
    fn accepting_elicitation_defaults_is_the_users_choice_only() {
        let config = Config::default();
        let secrets = Vec::new();
        let v = vars(&secrets);
        let text = "name = \"s\"\ncommand = \"x\"\nelicitation = \"accept_defaults\"\n";
        let spec = resolve(&plugin(text), Origin::User, &config, &v, &mut Vec::new()).unwrap();
        assert!(spec.elicit_defaults);
        let mut ignored = Vec::new();
        let spec = resolve(&plugin(text), Origin::McpJson, &config, &v, &mut ignored).unwrap();
        assert!(!spec.elicit_defaults);
        assert!(
            ignored[0].contains("`elicitation` is ignored"),
            "{ignored:?}"
        );
        let plain = "name = \"s\"\ncommand = \"x\"\n";
        let spec = resolve(&plugin(plain), Origin::User, &config, &v, &mut Vec::new()).unwrap();
        assert!(!spec.elicit_defaults);
        let bad = "name = \"s\"\ncommand = \"x\"\nelicitation = \"yes\"\n";
        assert!(resolve(&plugin(bad), Origin::User, &config, &v, &mut Vec::new()).is_err());
    }

    #[test]
    fn oauth_settings_expand_and_the_grant_is_checked() {
        std::env::set_var("REASONIX_TEST_MCP_SECRET", "s3");
        let config = Config::default();
        let secrets = Vec::new();
        let v = vars(&secrets);
        let p = plugin("name = \"h\"\ntype = \"http\"\nurl = \"https://x/mcp\"\n[oauth]\nclient_id = \"cid\"\nclient_secret = \"${REASONIX_TEST_MCP_SECRET}\"\ngrant = \"client_credentials\"\n");
        let spec = resolve(&p, Origin::User, &config, &v, &mut Vec::new()).unwrap();
        assert_eq!(spec.oauth.client_secret.as_deref(), Some("s3"));
        assert_eq!(spec.oauth.grant, oauth::CLIENT_CREDENTIALS);
        let plain = resolve(
            &plugin("name = \"h\"\ntype = \"http\"\nurl = \"https://x/mcp\"\n"),
            Origin::User,
            &config,
            &v,
            &mut Vec::new(),
        )
        .unwrap();
        assert_eq!(plain.oauth.grant, oauth::AUTHORIZATION_CODE);
        let bad = plugin("name = \"h\"\ntype = \"http\"\nurl = \"https://x/mcp\"\noauth = { grant = \"password\" }\n");
        let err = resolve(&bad, Origin::User, &config, &v, &mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains("oauth.grant"), "{err}");
    }

    #[test]
    fn only_the_user_config_trusts_a_tool_as_read_only_for_planning() {
        let config = Config::default();
        let secrets = Vec::new();
        let v = vars(&secrets);
        let p = plugin("name = \"s\"\ncommand = \"x\"\ntrusted_read_only_tools = [\"search\"]\n");
        let mut ignored = Vec::new();
        let user = resolve(&p, Origin::User, &config, &v, &mut ignored).unwrap();
        assert!(user.trusted_read_only.contains("search") && ignored.is_empty());
        let project = resolve(&p, Origin::ProjectToml, &config, &v, &mut ignored).unwrap();
        assert!(project.trusted_read_only.is_empty());
        assert!(
            ignored[0].contains("trusted_read_only_tools"),
            "{ignored:?}"
        );
    }

    #[test]
    fn only_the_user_config_loosens_a_sandbox_and_projects_may_tighten_it() {
        std::env::set_var("REASONIX_TEST_MCP_CACHE", "/var/cache/x");
        let config = Config::default();
        let secrets = Vec::new();
        let v = vars(&secrets);
        let resolved = |text: &str, origin: Origin| {
            let mut ignored = Vec::new();
            let spec = resolve(&plugin(text), origin, &config, &v, &mut ignored).unwrap();
            (spec.sandbox, ignored)
        };
        let off = "name = \"s\"\ncommand = \"x\"\nsandbox = \"off\"\n";
        let wide = "name = \"s\"\ncommand = \"x\"\nsandbox = { network = false, allow_write = [\"${REASONIX_TEST_MCP_CACHE}\"] }\n";
        assert_eq!(resolved(off, Origin::User), (ServerSandbox::Off, vec![]));
        let user_wide = ServerSandbox::Jail {
            network: false,
            allow_write: vec![PathBuf::from("/var/cache/x")],
        };
        assert_eq!(resolved(wide, Origin::User), (user_wide.clone(), vec![]));
        assert_eq!(
            user_wide.to_string(),
            "network off, writes: workspace, /var/cache/x"
        );
        for origin in [Origin::ProjectToml, Origin::McpJson] {
            let (sandbox, ignored) = resolved(off, origin);
            assert_eq!(sandbox, ServerSandbox::default());
            assert!(ignored[0].contains("only the user config"), "{ignored:?}");
            let (sandbox, ignored) = resolved(wide, origin);
            let tightened = ServerSandbox::Jail {
                network: false,
                allow_write: vec![],
            };
            assert_eq!(sandbox, tightened, "network = false still counts");
            assert!(ignored[0].contains("allow_write"), "{ignored:?}");
        }
        let plain = resolved("name = \"s\"\ncommand = \"x\"\n", Origin::McpJson);
        assert_eq!(plain, (ServerSandbox::default(), vec![]));
        assert_eq!(plain.0.to_string(), "network on, writes: workspace");
        let bad: Result<PluginConfig, _> =
            toml::from_str("name = \"s\"\ncommand = \"x\"\nsandbox = \"none\"\n");
        let err = bad.unwrap_err().to_string();
        assert!(err.contains("\"off\" or a table"), "{err}");
        let json =
            parse_mcp_json(r#"{"mcpServers": {"s": {"command": "x", "sandbox": "off"}}}"#).unwrap();
        assert_eq!(json[0].sandbox, Some(PluginSandbox::Off));
    }
}
