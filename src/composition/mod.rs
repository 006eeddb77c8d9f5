//! Agent compositions: a persona plus a selection of tools, skills, MCP servers, hooks and
//! commands, bound to a conversation independently of the model. This file owns what a
//! definition is (`schemaVersion: 1`), its IDs and scopes, the stable refusal codes, and the
//! authority table: what each scope may set. The catalog on disk is `store`, the shipped
//! entries `builtin`, turning a definition into a run's configuration `resolve`, and pinning
//! MCP tool contracts `pin`.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

pub mod builtin;
pub mod pin;
pub mod resolve;
pub mod retain;
pub mod store;

/// The one definition format this build reads and writes.
pub const SCHEMA_VERSION: u32 = 1;

/// The stable refusal codes; `code: message` is what a user sees, and the CLI exits with
/// its own status for all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    Invalid,
    NotFound,
    ReadOnly,
    Conflict,
    Locked,
    Unavailable,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Invalid => "agent_composition.invalid",
            Code::NotFound => "agent_composition.not_found",
            Code::ReadOnly => "agent_composition.read_only",
            Code::Conflict => "agent_composition.conflict",
            Code::Locked => "agent_composition.locked",
            Code::Unavailable => "agent_composition.unavailable",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompositionError {
    pub code: Code,
    pub message: String,
}

impl CompositionError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        CompositionError {
            code,
            message: message.into(),
        }
    }
}

impl fmt::Display for CompositionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for CompositionError {}

fn invalid(message: impl Into<String>) -> CompositionError {
    CompositionError::new(Code::Invalid, message)
}

/// Where a definition comes from; decides what it may set (see [`check_authority`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Shipped in the binary, read-only.
    Builtin,
    /// `<home>/agent-presets/definitions/`: authored by the user.
    User,
    /// `<workspace>/.reasonix/agent-presets/definitions/`: repository files, untrusted.
    Project,
}

impl Scope {
    pub fn prefix(self) -> &'static str {
        match self {
            Scope::Builtin => "builtin",
            Scope::User => "user",
            Scope::Project => "project",
        }
    }
}

/// A canonical ID: `builtin:general`, `user:my-agent`, `project:review`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Id {
    pub scope: Scope,
    pub name: String,
}

impl Id {
    /// Parses `scope:name`; the name is `[a-z0-9][a-z0-9_-]*`, at most 64 bytes, so it is a
    /// safe file name in every scope.
    pub fn parse(text: &str) -> Result<Id, CompositionError> {
        let (scope, name) = text.split_once(':').ok_or_else(|| {
            invalid(format!(
                "`{text}` is not a composition ID; IDs are builtin:NAME, user:NAME or project:NAME"
            ))
        })?;
        let scope = match scope {
            "builtin" => Scope::Builtin,
            "user" => Scope::User,
            "project" => Scope::Project,
            other => {
                return Err(invalid(format!(
                    "unknown scope `{other}` in `{text}`; use builtin:, user: or project:"
                )))
            }
        };
        check_name(name)?;
        Ok(Id {
            scope,
            name: name.to_string(),
        })
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.scope.prefix(), self.name)
    }
}

/// A definition's name part: lower-case letters, digits, `-` and `_`, starting with a letter
/// or digit, 1 to 64 bytes.
pub fn check_name(name: &str) -> Result<(), CompositionError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(invalid(format!(
            "`{name}` is not a valid composition name (lower-case letters, digits, `-`, `_`; 1-64 bytes)"
        )))
    }
}

/// One module group's selection: inherit the configuration, or exactly these IDs. An empty
/// explicit list disables the group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Selection {
    #[default]
    Inherit,
    Only(Vec<String>),
}

impl Serialize for Selection {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Selection::Inherit => serializer.serialize_str("inherit"),
            Selection::Only(ids) => ids.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Selection {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Word(String),
            Ids(Vec<String>),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Word(word) if word == "inherit" => Ok(Selection::Inherit),
            Raw::Word(word) => Err(serde::de::Error::custom(format!(
                "a selection is \"inherit\" or a list of IDs, not \"{word}\""
            ))),
            Raw::Ids(ids) => Ok(Selection::Only(ids)),
        }
    }
}

impl Selection {
    /// Whether `id` survives this selection.
    pub fn keeps(&self, id: &str) -> bool {
        match self {
            Selection::Inherit => true,
            Selection::Only(ids) => ids.iter().any(|i| i == id),
        }
    }

    fn is_inherit(&self) -> bool {
        *self == Selection::Inherit
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Persona {
    /// Put before the first-party system prompt.
    #[serde(default)]
    pub prefix: String,
    /// Put after it.
    #[serde(default)]
    pub suffix: String,
}

/// The module groups a composition selects among.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Modules {
    #[serde(default, skip_serializing_if = "Selection::is_inherit")]
    pub tools: Selection,
    #[serde(default, skip_serializing_if = "Selection::is_inherit")]
    pub skills: Selection,
    #[serde(default, skip_serializing_if = "Selection::is_inherit")]
    pub mcp_servers: Selection,
    /// Hook events (`PostToolUse`, `Stop`, ...); the safety events are always kept.
    #[serde(default, skip_serializing_if = "Selection::is_inherit")]
    pub hooks: Selection,
    #[serde(default, skip_serializing_if = "Selection::is_inherit")]
    pub commands: Selection,
}

/// Per-server parameters a composition may set on a selected MCP server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Values are `${NAME}` references, never credential values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
    /// Values are `${NAME}` references, never credential values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_timeout_seconds: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_timeout_seconds: Option<u64>,
}

impl McpParams {
    /// Whether this sets anything that changes what a server launches or reaches.
    fn launch_overrides(&self) -> Vec<&'static str> {
        let mut keys = Vec::new();
        if self.args.is_some() {
            keys.push("args");
        }
        if self.url.is_some() {
            keys.push("url");
        }
        if self.env.is_some() {
            keys.push("env");
        }
        if self.headers.is_some() {
            keys.push("headers");
        }
        keys
    }
}

/// A definition file (`<id>.json`), the Studio data model's CLI subset.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Definition {
    pub schema_version: u32,
    /// The name part of the ID; the file name decides it, this copy is informational.
    #[serde(default)]
    pub id: String,
    /// The display name; matching names coexist across scopes.
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Set by the store: 1 for the first save, one more for every save after it.
    #[serde(default)]
    pub revision: u64,
    #[serde(default)]
    pub persona: Persona,
    #[serde(default)]
    pub modules: Modules,
    /// Parameters for selected MCP servers, by server name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mcp: BTreeMap<String, McpParams>,
}

/// Keys that would launch or replace a program; no scope may set them in a definition.
const LAUNCH_KEYS: &[&str] = &["command", "executable", "install", "package", "code"];

/// Parses definition JSON. Unknown keys are refused, with a clearer word for the ones that
/// would launch a program.
pub fn parse(text: &str) -> Result<Definition, CompositionError> {
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| invalid(format!("the definition is not JSON: {e}")))?;
    if let Some(servers) = value.get("mcp").and_then(|m| m.as_object()) {
        for (server, params) in servers {
            for key in LAUNCH_KEYS {
                if params.get(*key).is_some() {
                    return Err(invalid(format!(
                        "mcp.{server}.{key}: a composition cannot launch or replace a program; \
                         declare the server in [[plugins]] instead"
                    )));
                }
            }
        }
    }
    for key in LAUNCH_KEYS {
        if value.get(*key).is_some() {
            return Err(invalid(format!(
                "`{key}`: a composition cannot launch or replace a program"
            )));
        }
    }
    let definition: Definition =
        serde_json::from_value(value).map_err(|e| invalid(format!("the definition: {e}")))?;
    if definition.schema_version != SCHEMA_VERSION {
        return Err(invalid(format!(
            "schemaVersion {} is not supported; this reasonix reads schemaVersion {SCHEMA_VERSION}",
            definition.schema_version
        )));
    }
    Ok(definition)
}

/// The longest MCP call or startup timeout a definition may set, in seconds: the bound of the
/// configuration files.
pub const MAX_TIMEOUT_SECONDS: u64 = crate::config::MAX_MCP_TIMEOUT_SECONDS;

/// The hook events a composition can never deselect: they guard what the model may do.
pub const SAFETY_HOOKS: &[&str] = &["PreToolUse", "UserPromptSubmit", "PermissionRequest"];

/// The hook events a selection may name.
const HOOK_EVENTS: &[&str] = &[
    "PreToolUse",
    "PostToolUse",
    "UserPromptSubmit",
    "PermissionRequest",
    "Stop",
    "SubagentStop",
    "SessionStart",
    "Notification",
];

fn is_module_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
}

/// `${NAME}` and nothing else: a reference the credential owner expands, never a value.
pub fn is_reference(value: &str) -> bool {
    value
        .strip_prefix("${")
        .and_then(|rest| rest.strip_suffix('}'))
        .is_some_and(is_env_name)
}

/// The authority table: checks `definition` as a definition of `scope`. Built-ins are
/// checked when they are written into the binary; user definitions may set MCP launch
/// parameters with credentials as references; project definitions may set timeouts only.
pub fn check_authority(scope: Scope, definition: &Definition) -> Result<(), CompositionError> {
    let groups = [
        ("tools", &definition.modules.tools),
        ("skills", &definition.modules.skills),
        ("mcpServers", &definition.modules.mcp_servers),
        ("hooks", &definition.modules.hooks),
        ("commands", &definition.modules.commands),
    ];
    for (group, selection) in groups {
        if let Selection::Only(ids) = selection {
            if let Some(bad) = ids.iter().find(|id| !is_module_id(id)) {
                return Err(invalid(format!(
                    "modules.{group}: `{bad}` is not a valid ID"
                )));
            }
        }
    }
    if let Selection::Only(events) = &definition.modules.hooks {
        if let Some(bad) = events.iter().find(|e| !HOOK_EVENTS.contains(&e.as_str())) {
            return Err(invalid(format!(
                "modules.hooks: `{bad}` is not a hook event ({})",
                HOOK_EVENTS.join(", ")
            )));
        }
    }
    for (server, params) in &definition.mcp {
        if !is_module_id(server) {
            return Err(invalid(format!(
                "mcp: `{server}` is not a valid server name"
            )));
        }
        if !definition.modules.mcp_servers.keeps(server) {
            return Err(invalid(format!(
                "mcp.{server}: parameters for a server the composition does not select"
            )));
        }
        let launch = params.launch_overrides();
        match scope {
            Scope::Project if !launch.is_empty() => {
                return Err(invalid(format!(
                    "mcp.{server}.{}: a project definition cannot change how a server launches \
                     or what it reaches (args, url, env, headers); only timeouts",
                    launch[0]
                )));
            }
            Scope::Builtin if !launch.is_empty() => {
                return Err(invalid("built-ins ship no MCP overrides"));
            }
            _ => {}
        }
        for (key, map, valid) in [
            ("env", &params.env, is_env_name as fn(&str) -> bool),
            ("headers", &params.headers, is_header_name),
        ] {
            for (name, value) in map.iter().flatten() {
                if !valid(name) {
                    return Err(invalid(format!(
                        "mcp.{server}.{key}: `{name}` is not a valid name"
                    )));
                }
                if !is_reference(value) {
                    return Err(invalid(format!(
                        "mcp.{server}.{key}.{name}: values must be ${{NAME}} references, \
                         never the credential itself"
                    )));
                }
            }
        }
        for (key, secs) in [
            ("callTimeoutSeconds", params.call_timeout_seconds),
            ("startupTimeoutSeconds", params.startup_timeout_seconds),
        ] {
            if secs.is_some_and(|s| s > MAX_TIMEOUT_SECONDS) {
                return Err(invalid(format!(
                    "mcp.{server}.{key}: at most {MAX_TIMEOUT_SECONDS} seconds (one day)"
                )));
            }
        }
        if let Some(url) = &params.url {
            if !(url.starts_with("https://") || url.starts_with("http://")) {
                return Err(invalid(format!(
                    "mcp.{server}.url: `{url}` is not an http(s) URL"
                )));
            }
        }
    }
    Ok(())
}

/// A short stable digest of any serialisable value (persona, modules), for the binding.
pub fn digest<T: Serialize>(value: &T) -> String {
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    crate::hash::sha256_hex(&bytes)[..16].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_mcp(params: McpParams) -> Definition {
        Definition {
            schema_version: 1,
            modules: Modules {
                mcp_servers: Selection::Only(vec!["docs".into()]),
                ..Modules::default()
            },
            mcp: BTreeMap::from([("docs".to_string(), params)]),
            ..Definition::default()
        }
    }

    #[test]
    fn ids_parse_by_scope_and_refuse_anything_else() {
        assert_eq!(Id::parse("user:my-agent").unwrap().scope, Scope::User);
        assert_eq!(Id::parse("project:r2").unwrap().to_string(), "project:r2");
        for bad in [
            "my-agent",
            "team:x",
            "user:",
            "user:../x",
            "user:A",
            "user:-x",
        ] {
            let err = Id::parse(bad).unwrap_err();
            assert_eq!(err.code, Code::Invalid, "{bad}");
        }
    }

    #[test]
    fn selections_read_inherit_or_a_list_and_an_empty_list_disables() {
        let d = parse(
            r#"{"schemaVersion":1,"modules":{"tools":["bash"],"skills":[],"hooks":"inherit"}}"#,
        )
        .unwrap();
        assert_eq!(d.modules.tools, Selection::Only(vec!["bash".into()]));
        assert!(!d.modules.skills.keeps("any"));
        assert!(d.modules.hooks.keeps("Stop"));
        assert!(parse(r#"{"schemaVersion":1,"modules":{"tools":"all"}}"#).is_err());
        assert!(parse(r#"{"schemaVersion":2}"#).is_err());
        assert!(parse(r#"{"schemaVersion":1,"extra":1}"#).is_err());
    }

    /// The authority table, one row per (value, scope).
    #[test]
    fn authority_table() {
        let args = McpParams {
            args: Some(vec!["--x".into()]),
            ..McpParams::default()
        };
        let empty_args = McpParams {
            args: Some(vec![]),
            ..McpParams::default()
        };
        let url = McpParams {
            url: Some("https://example.test/mcp".into()),
            ..McpParams::default()
        };
        let env_ref = McpParams {
            env: Some(BTreeMap::from([("TOKEN".into(), "${DOCS_TOKEN}".into())])),
            ..McpParams::default()
        };
        let empty_env = McpParams {
            env: Some(BTreeMap::new()),
            ..McpParams::default()
        };
        let env_value = McpParams {
            env: Some(BTreeMap::from([("TOKEN".into(), "sk-live-123".into())])),
            ..McpParams::default()
        };
        let header_ref = McpParams {
            headers: Some(BTreeMap::from([(
                "Authorization".into(),
                "${DOCS_AUTH}".into(),
            )])),
            ..McpParams::default()
        };
        let empty_headers = McpParams {
            headers: Some(BTreeMap::new()),
            ..McpParams::default()
        };
        let timeouts = McpParams {
            call_timeout_seconds: Some(30),
            startup_timeout_seconds: Some(5),
            ..McpParams::default()
        };
        let huge_call = McpParams {
            call_timeout_seconds: Some(MAX_TIMEOUT_SECONDS + 1),
            ..McpParams::default()
        };
        let huge_start = McpParams {
            startup_timeout_seconds: Some(u64::MAX),
            ..McpParams::default()
        };
        // (params, builtin ok, user ok, project ok)
        let rows = [
            ("args", args, false, true, false),
            ("empty args", empty_args, false, true, false),
            ("url", url, false, true, false),
            ("env reference", env_ref, false, true, false),
            ("empty env", empty_env, false, true, false),
            ("env value", env_value, false, false, false),
            ("header reference", header_ref, false, true, false),
            ("empty headers", empty_headers, false, true, false),
            ("timeouts", timeouts, true, true, true),
            ("a call timeout over a day", huge_call, false, false, false),
            (
                "a startup timeout over a day",
                huge_start,
                false,
                false,
                false,
            ),
        ];
        for (what, params, builtin, user, project) in rows {
            let d = with_mcp(params);
            for (scope, expected) in [
                (Scope::Builtin, builtin),
                (Scope::User, user),
                (Scope::Project, project),
            ] {
                let got = check_authority(scope, &d);
                assert_eq!(got.is_ok(), expected, "{what} in {scope:?}: {got:?}");
                if let Err(err) = got {
                    assert_eq!(err.code, Code::Invalid);
                }
            }
        }
    }

    #[test]
    fn no_scope_may_launch_a_program() {
        for text in [
            r#"{"schemaVersion":1,"modules":{"mcpServers":["x"]},"mcp":{"x":{"command":"sh"}}}"#,
            r#"{"schemaVersion":1,"command":"sh"}"#,
            r#"{"schemaVersion":1,"modules":{"hooks":["PostToolUse"]},"install":"x"}"#,
        ] {
            let err = parse(text).unwrap_err();
            assert_eq!(err.code, Code::Invalid);
            assert!(err.message.contains("launch"), "{err}");
        }
        let d = parse(r#"{"schemaVersion":1,"modules":{"hooks":["Teardown"]}}"#).unwrap();
        assert!(check_authority(Scope::User, &d).is_err());
    }

    /// Parameter names are validated in every scope: server names, env and header names,
    /// and the parameter keys themselves.
    #[test]
    fn parameter_names_are_validated() {
        let env = |name: &str| McpParams {
            env: Some(BTreeMap::from([(name.to_string(), "${OK}".to_string())])),
            ..McpParams::default()
        };
        let header = |name: &str| McpParams {
            headers: Some(BTreeMap::from([(name.to_string(), "${OK}".to_string())])),
            ..McpParams::default()
        };
        for (what, params) in [
            ("env name with a digit first", env("1TOKEN")),
            ("env name with a dash", env("MY-TOKEN")),
            ("env name with =", env("A=B")),
            ("header name with a space", header("X Auth")),
            ("header name with a colon", header("X:Auth")),
            ("empty header name", header("")),
        ] {
            let err = check_authority(Scope::User, &with_mcp(params)).unwrap_err();
            assert_eq!(err.code, Code::Invalid, "{what}");
            assert!(err.message.contains("not a valid name"), "{what}: {err}");
        }
        assert!(check_authority(Scope::User, &with_mcp(env("DOCS_TOKEN_2"))).is_ok());
        assert!(check_authority(Scope::User, &with_mcp(header("X-Api_Key"))).is_ok());
        let mut bad_server = with_mcp(McpParams::default());
        bad_server.modules.mcp_servers = Selection::Inherit;
        bad_server.mcp = BTreeMap::from([("../x".to_string(), McpParams::default())]);
        assert_eq!(
            check_authority(Scope::User, &bad_server).unwrap_err().code,
            Code::Invalid
        );
        for unknown in [
            r#"{"schemaVersion":1,"modules":{"mcpServers":["docs"]},"mcp":{"docs":{"cwd":"/"}}}"#,
            r#"{"schemaVersion":1,"modules":{"mcpServers":["docs"]},"mcp":{"docs":{"Args":[]}}}"#,
            r#"{"schemaVersion":1,"modules":{"extensions":[]}}"#,
        ] {
            assert_eq!(parse(unknown).unwrap_err().code, Code::Invalid, "{unknown}");
        }
    }

    #[test]
    fn references_are_exactly_dollar_brace_name() {
        assert!(is_reference("${A_B1}"));
        for bad in ["$A", "${A}x", "${}", "${1A}", "value", "${A-B}"] {
            assert!(!is_reference(bad), "{bad}");
        }
    }
}
