//! The TOML schema: one serde struct per table, with the spec's defaults. These structs are both
//! what a config file deserialises into and what the rest of the program reads after layering.
//!
//! The loader's deserializer (`document.rs`) learns the known keys from these structs' field
//! names as serde asks for them, so adding a field here is all it takes to make a key known; a
//! struct must therefore be read as a struct (no `flatten`, which hides its field names).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Deserializer, Serialize};

/// Where a provider or plugin entry came from, for trust decisions made by its consumer (a
/// project file is written by whoever wrote the repository, not by the user).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    /// Compiled in (the DeepSeek preset used when no provider is configured).
    #[default]
    Builtin,
    /// `<home>/config.toml`.
    User,
    /// `./reasonix.toml`.
    Project,
    /// `--config FILE`.
    Extra,
}

/// The whole configuration after layering. `home` and `sources` are filled by the loader.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// The reasonix home (`$REASONIX_HOME`, else `~/.reasonix`); holds `config.toml` and `.env`.
    #[serde(skip)]
    pub home: PathBuf,
    /// The files that were read, lowest layer first.
    #[serde(skip)]
    pub sources: Vec<PathBuf>,
    /// `--trust-project`: the workspace is trusted for this run as a whole (every file
    /// `config::trust::Bound` names); set by the loader, never read from a file.
    #[serde(skip)]
    pub trust_project: bool,
    /// Claude print mode's `--setting-sources`: which Claude Code settings files are read
    /// (`user`, `project`, `local`); `None` reads all of them. Set by the loader.
    #[serde(skip)]
    pub claude_setting_sources: Option<Vec<String>>,
    /// Which non-blocking hooks of Claude Code's settings files a composition binding keeps;
    /// set by applying the binding (`composition::resolve::apply`), never read from a file.
    #[serde(skip)]
    pub bound_claude_hooks: BoundClaudeHooks,
    /// A provider name, a bare model name or `provider/model`.
    pub default_model: Option<String>,
    /// UI language tag (`en`, `zh`); `None` or empty = detect from `$REASONIX_LANG`, then the
    /// locale (`$LC_ALL`, `$LC_MESSAGES`, `$LANG`). Never changes what the model sees.
    pub language: Option<String>,
    pub ui: UiConfig,
    pub agent: AgentConfig,
    pub providers: Vec<ProviderConfig>,
    pub environment: EnvironmentConfig,
    pub tools: ToolsConfig,
    pub skills: SkillsConfig,
    pub permissions: PermissionsConfig,
    pub sandbox: SandboxConfig,
    pub serve: ServeConfig,
    pub plugins: Vec<PluginConfig>,
    /// `[[hooks]]`: the user's commands run at points of the loop (see `agent::hooks`).
    pub hooks: Vec<HookConfig>,
}

/// How a conversation takes the non-blocking hooks of Claude Code's settings files (the
/// safety events, `PreToolUse`, `UserPromptSubmit` and `PermissionRequest`, always load live
/// from the files, like the safety `[[hooks]]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum BoundClaudeHooks {
    /// Not bound, or bound to every hook event: each hook as the files hold it now.
    #[default]
    Live,
    /// Bound to these events without a retained bundle: their hooks, as the files hold them.
    Events(Vec<String>),
    /// Bound with a retained bundle: none from the files; the bundle holds the selected ones
    /// as they were at binding (`composition::retain`).
    Retained,
}

/// One `[[hooks]]` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HookConfig {
    /// `PreToolUse`, `PostToolUse`, `UserPromptSubmit`, `PermissionRequest`, `Stop`,
    /// `SubagentStop`, `SessionStart` or `Notification`.
    pub event: String,
    /// A pattern over tool names (ours or Claude Code's); empty or `*` matches every tool.
    pub matcher: String,
    /// A shell command line, run like `bash` runs one.
    pub command: String,
    /// 0 = 60 seconds.
    pub timeout_seconds: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct UiConfig {
    /// `classic` | `desktop`: a compatibility setting of the shared schema, accepted and without
    /// effect (the spec defines no key maps for it; the chat has one).
    pub shortcut_layout: Option<String>,
    pub cursor_shape: CursorShape,
}

/// The line editor's cursor. Unknown or empty values fall back to `bar` (per the spec), so a
/// config shared with another front end never fails to load over it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CursorShape {
    Underline,
    Block,
    #[default]
    Bar,
}

impl<'de> Deserialize<'de> for CursorShape {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(match text.trim().to_ascii_lowercase().as_str() {
            "underline" => CursorShape::Underline,
            "block" => CursorShape::Block,
            _ => CursorShape::Bar,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentConfig {
    pub system_prompt: Option<String>,
    /// Read instead of `system_prompt`; a relative path is resolved against the directory of the
    /// file that set it.
    pub system_prompt_file: Option<PathBuf>,
    /// Appended after the system prompt (built-in or configured).
    pub append_system_prompt: Option<String>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u64>,
    /// Passed through to the provider (`low`, `medium`, `high`, `max`, ...).
    pub reasoning_effort: Option<String>,
    pub reasoning_language: ReasoningLanguage,
    /// A model reference for the two-model coordinator.
    pub planner_model: Option<String>,
    /// The Guardian reviewer's model (`approvals_reviewer = "auto_review"`); unset: the
    /// executor's. User config only: a repository must not pick who approves its calls.
    pub reviewer_model: Option<String>,
    /// How long one review may take before the call goes to a person instead.
    pub reviewer_timeout_seconds: u64,
    /// The most tokens a review's reply may take.
    pub reviewer_max_tokens: u64,
    /// Context fraction at which stale tool results are snipped.
    pub tool_result_snip_ratio: f64,
    /// Context fraction at which stale tool results are pruned, then summarised if needed.
    pub compact_ratio: f64,
    /// Context fraction at which a fold runs even when its economics say skip.
    pub compact_force_ratio: f64,
    /// Read-only tool calls run concurrently, at most this many at once.
    pub max_parallel_tools: u32,
    /// Tool rounds a headless `reasonix run` may take unless `--max-steps` says otherwise;
    /// 0: no bound. The chat has none: a person is there to stop it.
    pub max_steps_headless: u32,
    pub subagent_model: Option<String>,
    pub subagent_effort: Option<String>,
    /// Per-profile model overrides, keyed by subagent profile name.
    pub subagent_models: BTreeMap<String, String>,
    pub subagent_efforts: BTreeMap<String, String>,
    pub max_subagent_concurrency: u32,
    pub max_parallel_writers: u32,
    /// Subagents one model reply's tool calls may start, and one run may start.
    pub max_subagents_per_round: u32,
    pub max_subagents_per_run: u32,
    /// MCP tool calls one model reply may make; the calls past it are refused with the cap
    /// in their result (a reply of 200 calls cannot hold 200 server requests at once).
    pub max_mcp_calls_per_round: u32,
    /// Bytes (as read from disk, before base64) of the images one request may carry: the
    /// history's images together. A `view_image` past it is refused, never an old image
    /// dropped, so the request prefix stays as sent.
    pub max_image_bytes_per_request: u64,
    /// A turn whose task looks complex starts in plan mode, in any posture.
    pub auto_plan: bool,
    /// Legacy alias of `[[plugins]] trusted_read_only_tools`: full `mcp__server__tool`
    /// names callable while planning.
    pub plan_mode_allowed_tools: Vec<String>,
    /// Legacy; decoded for config round trips only, it grants and revokes nothing.
    pub plan_mode_read_only_commands: Vec<String>,
    /// Put before the first-party system prompt (the persona builtin:general inherits;
    /// `/persona` edits it).
    pub persona_prefix: Option<String>,
    /// Put after the first-party system prompt.
    pub persona_suffix: Option<String>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            system_prompt: None,
            system_prompt_file: None,
            append_system_prompt: None,
            temperature: None,
            max_tokens: None,
            reasoning_effort: None,
            reasoning_language: ReasoningLanguage::Auto,
            planner_model: None,
            reviewer_model: None,
            reviewer_timeout_seconds: 60,
            reviewer_max_tokens: 1024,
            tool_result_snip_ratio: 0.6,
            compact_ratio: 0.8,
            compact_force_ratio: 0.9,
            max_parallel_tools: 4,
            max_steps_headless: 200,
            subagent_model: None,
            subagent_effort: None,
            subagent_models: BTreeMap::new(),
            subagent_efforts: BTreeMap::new(),
            max_subagent_concurrency: 6,
            max_parallel_writers: 3,
            max_subagents_per_round: 16,
            max_subagents_per_run: 64,
            max_mcp_calls_per_round: super::limits::DEFAULT_MCP_CALLS_PER_ROUND,
            max_image_bytes_per_request: super::limits::DEFAULT_IMAGE_BYTES_PER_REQUEST,
            auto_plan: false,
            plan_mode_allowed_tools: Vec::new(),
            plan_mode_read_only_commands: Vec::new(),
            persona_prefix: None,
            persona_suffix: None,
        }
    }
}

/// The language the model is asked to reason (think) in: `auto` asks nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningLanguage {
    #[default]
    Auto,
    #[serde(
        alias = "chinese",
        alias = "Chinese",
        alias = "中文",
        alias = "zh-CN",
        alias = "zh_CN"
    )]
    Zh,
    #[serde(alias = "english", alias = "English")]
    En,
}

/// One `[[providers]]` entry: a vendor endpoint (one base URL and key) offering one or more
/// models. Entries are replaced whole when a later layer declares the same `name`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderConfig {
    pub name: String,
    #[serde(default = "default_kind")]
    pub kind: String,
    #[serde(default)]
    pub base_url: Option<String>,
    /// Full chat URL for gateways that do not use `base_url + "/chat/completions"`.
    #[serde(default)]
    pub chat_url: Option<String>,
    #[serde(default)]
    pub models_url: Option<String>,
    /// Single-model form; exclusive with `models`.
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub models: Vec<String>,
    /// Which of `models` a bare provider reference picks; defaults to the first.
    #[serde(default)]
    pub default: Option<String>,
    /// The environment variable holding the key; `None` for servers that need no key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Tokens; 0 or unset disables compaction for this provider.
    #[serde(default)]
    pub context_window: Option<u64>,
    /// The models accept images (`view_image` sends them as image content parts). Off by
    /// default: a text-only server rejects a request with an image part outright.
    #[serde(default)]
    pub vision: bool,
    #[serde(default)]
    pub model_overrides: BTreeMap<String, ModelOverride>,
    /// Keyed by model ID.
    #[serde(default)]
    pub prices: BTreeMap<String, PriceConfig>,
    /// Sent on every request; values get `${VAR}` expansion at resolution time.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Merged into the top level of every request body.
    #[serde(default)]
    pub extra_body: toml::Table,
    /// PEM bundle of extra trusted CAs; relative to the file that set it.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    #[serde(default)]
    pub timeouts: TimeoutsConfig,
    #[serde(default)]
    pub retry: RetryConfig,
    #[serde(skip)]
    pub origin: Layer,
}

fn default_kind() -> String {
    "openai".to_string()
}

impl ProviderConfig {
    /// The models this entry offers, in declaration order.
    pub fn model_names(&self) -> Vec<&str> {
        match &self.model {
            Some(model) => vec![model.as_str()],
            None => self.models.iter().map(String::as_str).collect(),
        }
    }

    /// The model a bare reference to this provider selects.
    pub fn default_model(&self) -> Option<&str> {
        self.default
            .as_deref()
            .or(self.model.as_deref())
            .or(self.models.first().map(String::as_str))
    }

    /// Whether `model` accepts image content parts: its `model_overrides` entry decides when
    /// it sets `vision`, else the provider-wide `vision`.
    pub fn vision(&self, model: &str) -> bool {
        self.model_overrides
            .get(model)
            .and_then(|o| o.vision)
            .unwrap_or(self.vision)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelOverride {
    /// A positive value replaces the provider-wide `context_window` for this model.
    pub context_window: Option<u64>,
    /// Replaces the provider-wide `vision` for this model.
    pub vision: Option<bool>,
}

/// USD per one million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PriceConfig {
    pub input: f64,
    #[serde(default)]
    pub input_cache_hit: Option<f64>,
    pub output: f64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TimeoutsConfig {
    pub connect_seconds: Option<u64>,
    /// No byte on an open stream for this long aborts it.
    pub idle_seconds: Option<u64>,
    /// The response head must be whole this long after the request.
    pub head_seconds: Option<u64>,
    /// The whole reply must be in this long after the request.
    pub reply_seconds: Option<u64>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RetryConfig {
    pub max_retries: Option<u32>,
    pub initial_backoff_ms: Option<u64>,
    pub max_backoff_seconds: Option<u64>,
    /// The waits of one request's retries together (429 `Retry-After` waits aside).
    pub max_wait_seconds: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EnvironmentConfig {
    /// Inject a stable startup summary of OS, shell and tool versions.
    pub enabled: bool,
    /// Trusted executable paths shown to the model, by tool name.
    pub tools: BTreeMap<String, PathBuf>,
}

impl Default for EnvironmentConfig {
    fn default() -> Self {
        EnvironmentConfig {
            enabled: true,
            tools: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolsConfig {
    /// Built-in tools to expose; empty = all.
    pub enabled: Vec<String>,
    /// Foreground bash cap; 0 = no cap.
    pub bash_timeout_seconds: u64,
    pub mcp_call_timeout_seconds: u64,
    pub shell: ShellConfig,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        ToolsConfig {
            enabled: Vec::new(),
            bash_timeout_seconds: 120,
            mcp_call_timeout_seconds: 300,
            shell: ShellConfig::default(),
        }
    }
}

/// User-only: a repository must not choose the binary we execute.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ShellConfig {
    pub prefer: ShellPrefer,
    pub path: Option<PathBuf>,
}

/// The refusal of a PowerShell interpreter on a system whose shell tool runs POSIX shells.
pub const POWERSHELL_ELSEWHERE: &str = "`tools.shell.prefer` PowerShell (powershell, pwsh) is for \
    Windows; on this system use \"auto\", \"bash\" or \"sh\"";

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ShellPrefer {
    #[default]
    Auto,
    Bash,
    Sh,
    /// Windows only: refused elsewhere.
    Powershell,
    /// Windows only: refused elsewhere.
    Pwsh,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SkillsConfig {
    /// Extra custom skill roots (`~` is left for the skills loader to expand).
    pub paths: Vec<String>,
    /// Convention roots to hide.
    pub excluded_paths: Vec<String>,
    pub disabled_skills: Vec<String>,
    /// A bound conversation's retained bundle (`composition::retain`): its skills come from
    /// there, frozen at binding, instead of the roots. Set by applying a binding, never read
    /// from a file.
    #[serde(skip)]
    pub retained: Option<std::path::PathBuf>,
    /// The bundle came from an archive: none of its skills is trusted.
    #[serde(skip)]
    pub retained_untrusted: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PermissionsConfig {
    /// Writer fallback when no rule matches.
    pub mode: PermissionMode,
    pub allow: Vec<String>,
    pub ask: Vec<String>,
    /// Accumulates across layers: a later file can add deny rules, never drop them.
    pub deny: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionMode {
    #[default]
    Ask,
    Allow,
    Deny,
}

/// Where the usual tools keep credentials; hidden from every tool unless the user's own
/// `[sandbox] default_forbid_read` says otherwise. Entries whose variable is unset are skipped.
pub const DEFAULT_FORBID_READ: &[&str] = &[
    "${HOME}/.ssh",
    "${HOME}/.gnupg",
    "${HOME}/.aws",
    "${HOME}/.config/gcloud",
    "${HOME}/.azure",
    "${HOME}/.kube",
    "${HOME}/.docker/config.json",
    "${HOME}/.netrc",
    "${HOME}/.git-credentials",
    "${HOME}/.npmrc",
    "${HOME}/.pypirc",
    "${HOME}/.cargo/credentials.toml",
];

/// Enforcement beneath permissions. Every key but `forbid_read` is user-only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SandboxConfig {
    /// File writers are confined here; `None` (or `""` in the file) = the working directory.
    pub workspace_root: Option<PathBuf>,
    pub allow_write: Vec<PathBuf>,
    /// Raw entries; `${VAR}` expansion is the consumer's job (see `config::env::expand`).
    /// Accumulates across layers like `permissions.deny`.
    pub forbid_read: Vec<String>,
    /// The credential locations hidden on top of `forbid_read`; `None` means
    /// [`DEFAULT_FORBID_READ`]. User-only, so a repository cannot unhide them; a user who needs
    /// one readable lists the rest.
    pub default_forbid_read: Option<Vec<String>>,
    pub bash: BashSandbox,
    pub network: bool,
    pub backend: SandboxBackend,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BashSandbox {
    #[default]
    Enforce,
    Off,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxBackend {
    #[default]
    Auto,
    Bwrap,
    Landlock,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServeConfig {
    pub auth_mode: AuthMode,
    /// Legacy: the token and the password hash live in `<home>/serve-auth.json`, which the
    /// jail cannot read; still honoured here, with a warning, until `serve --migrate-auth`.
    pub token: Option<String>,
    pub password_hash: Option<String>,
    /// Trust `X-Forwarded-*` headers.
    pub behind_proxy: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthMode {
    #[default]
    #[serde(rename = "none")]
    NoAuth,
    Token,
    Password,
}

/// One `[[plugins]]` entry: an MCP server. `${VAR}` expansion of `command`, `args`, `env`, `url`
/// and `headers` is left to the MCP client, which knows which variables it may see.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PluginConfig {
    pub name: String,
    #[serde(rename = "type", default)]
    pub kind: PluginType,
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Per-server call timeout; 0 = the global `tools.mcp_call_timeout_seconds`.
    #[serde(default)]
    pub call_timeout_seconds: Option<u64>,
    /// Per-tool timeouts keyed by the server's raw tool name.
    #[serde(default)]
    pub tool_timeout_seconds: BTreeMap<String, u64>,
    /// How long the handshake may take.
    #[serde(default = "default_startup_timeout")]
    pub startup_timeout_seconds: u64,
    /// Raw tool names of this server the user audited as read-only: callable while
    /// planning (a server's own readOnlyHint is not enough). Only the user config counts.
    #[serde(default)]
    pub trusted_read_only_tools: Vec<String>,
    /// `None` = by provenance: `approve` for user config, `auto` for project files.
    #[serde(default)]
    pub default_tools_approval_mode: Option<ApprovalMode>,
    #[serde(default)]
    pub tools: BTreeMap<String, PluginToolConfig>,
    #[serde(default)]
    pub approvals_reviewer: ApprovalsReviewer,
    /// How a stdio server is confined; `None` = the jail with the defaults of
    /// [`PluginJail`]. Loosening it (`"off"`, `allow_write`) counts only in the user config.
    #[serde(default)]
    pub sandbox: Option<PluginSandbox>,
    /// Directories offered through `roots/list`; `None` = the workspace plus the absolute
    /// directories in `args`, `[]` = no roots capability at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<Vec<String>>,
    /// OAuth settings of an HTTP server (`[plugins.oauth]`); discovery needs none of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<PluginOAuth>,
    /// `"accept_defaults"`: where no one can answer, a request for input whose every required
    /// field has a default is accepted with the defaults (user config only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<String>,
    #[serde(skip)]
    pub origin: Layer,
}

/// `[plugins.oauth]`: a pre-registered client, a Client ID Metadata Document URL, or the
/// client-credentials grant for machine-to-machine use. `${VAR}` is expanded by the consumer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PluginOAuth {
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    /// An https URL of a Client ID Metadata Document, used where the server supports them.
    pub client_metadata_url: Option<String>,
    /// `authorization_code` (default) or `client_credentials`.
    pub grant: Option<String>,
    /// Scopes to ask for instead of the ones the server names.
    pub scopes: Option<Vec<String>>,
    /// The loopback port of the redirect listener (0 or unset = any free port).
    pub callback_port: Option<u16>,
    /// `private_key_jwt`: a PEM private key (a path, or the PEM text) the client-credentials
    /// grant signs its client assertion with, instead of sending a secret.
    pub private_key: Option<String>,
    /// `ES256` or `RS256`; unset = what the key is.
    pub signing_algorithm: Option<String>,
    /// Cross-app access (`grant = "jwt_bearer"`): the enterprise IdP's token endpoint, the
    /// client id there, and the ID token exchanged for an identity assertion grant.
    pub idp_token_endpoint: Option<String>,
    pub idp_client_id: Option<String>,
    pub id_token: Option<String>,
}

/// `[[plugins]] sandbox`: the string `"off"` or a table of [`PluginJail`] settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginSandbox {
    /// The server runs unconfined.
    Off,
    Jail(PluginJail),
}

/// The jail of a stdio server: the backend bash uses (`[sandbox] backend`), with the hidden
/// paths of `[sandbox] forbid_read`, but the server's own write roots and network switch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PluginJail {
    /// `None` = on: most servers exist to reach some service.
    pub network: Option<bool>,
    /// Write roots beyond the workspace; raw entries, `${VAR}` expanded by the consumer.
    pub allow_write: Vec<String>,
}

impl Serialize for PluginSandbox {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            PluginSandbox::Off => serializer.serialize_str("off"),
            PluginSandbox::Jail(jail) => jail.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for PluginSandbox {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // A visitor rather than `#[serde(untagged)]`, whose error names no accepted form.
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = PluginSandbox;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("\"off\" or a table like { network = false, allow_write = [...] }")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<PluginSandbox, E> {
                match text {
                    "off" => Ok(PluginSandbox::Off),
                    other => Err(E::invalid_value(serde::de::Unexpected::Str(other), &self)),
                }
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<PluginSandbox, A::Error> {
                let jail =
                    PluginJail::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(PluginSandbox::Jail(jail))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// The longest MCP startup or call timeout any configuration may set, in seconds (one day):
/// longer is refused at load, unlike the other timeouts, which saturate there.
pub const MAX_MCP_TIMEOUT_SECONDS: u64 = super::limits::MAX_TIMEOUT_SECONDS;

fn default_startup_timeout() -> u64 {
    30
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PluginType {
    #[default]
    #[serde(rename = "stdio")]
    Stdio,
    #[serde(rename = "http")]
    Http,
    /// Same transport as `http`; kept distinct so the name round-trips.
    #[serde(rename = "streamable-http")]
    StreamableHttp,
    /// The legacy HTTP+SSE transport: recognised, answered with a clear error by the client.
    #[serde(rename = "sse")]
    Sse,
    /// A server inside the program driving reasonix (the Claude Agent SDK's
    /// `create_sdk_mcp_server`), reached through its control channel; only such a session
    /// can start one.
    #[serde(rename = "sdk")]
    Sdk,
}

impl PluginType {
    /// `http` and `streamable-http` name the same transport.
    pub fn is_http(self) -> bool {
        matches!(self, PluginType::Http | PluginType::StreamableHttp)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PluginToolConfig {
    pub approval_mode: Option<ApprovalMode>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalMode {
    Auto,
    Prompt,
    Writes,
    Approve,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalsReviewer {
    #[default]
    User,
    AutoReview,
}

/// The provider used when no file declares any: DeepSeek, so `reasonix run` works with only
/// `DEEPSEEK_API_KEY` set.
pub fn builtin_provider() -> ProviderConfig {
    ProviderConfig {
        name: "deepseek".into(),
        kind: default_kind(),
        base_url: Some("https://api.deepseek.com".into()),
        chat_url: None,
        models_url: None,
        model: None,
        models: vec!["deepseek-v4-flash".into(), "deepseek-v4-pro".into()],
        default: Some("deepseek-v4-flash".into()),
        api_key_env: Some("DEEPSEEK_API_KEY".into()),
        context_window: Some(1_000_000),
        vision: false,
        model_overrides: BTreeMap::new(),
        prices: BTreeMap::new(),
        headers: BTreeMap::new(),
        extra_body: toml::Table::new(),
        ca_file: None,
        timeouts: TimeoutsConfig::default(),
        retry: RetryConfig::default(),
        origin: Layer::Builtin,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_shape_falls_back_to_bar() {
        let ui: UiConfig = toml::from_str("cursor_shape = \"BLOCK\"").unwrap();
        assert_eq!(ui.cursor_shape, CursorShape::Block);
        let ui: UiConfig = toml::from_str("cursor_shape = \"wobbly\"").unwrap();
        assert_eq!(ui.cursor_shape, CursorShape::Bar);
    }

    #[test]
    fn provider_default_model_prefers_default_then_model_then_first() {
        let mut p = builtin_provider();
        assert_eq!(p.default_model(), Some("deepseek-v4-flash"));
        p.default = None;
        p.models.reverse();
        assert_eq!(p.default_model(), Some("deepseek-v4-pro"));
        p.models.clear();
        p.model = Some("solo".into());
        assert_eq!(p.model_names(), vec!["solo"]);
        assert_eq!(p.default_model(), Some("solo"));
    }
}
