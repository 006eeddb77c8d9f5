//! From a chosen composition to a run: resolves inherited groups once against what this
//! machine has ([`Available`]), records the result as a [`Binding`] (local session
//! metadata, never provider messages), and applies a binding to the loaded configuration and
//! the tool registry. Applying edits the same configuration keys a user could set by hand
//! (`[agent] persona_*`, `[tools] enabled`, `[skills] disabled_skills`, `[[plugins]]`,
//! `[[hooks]]`), so a bound session's requests are byte for byte those of an unbound session
//! with the same effective persona and tools: preset names and revisions never reach the
//! provider. Selecting never grants: permission rules and the safety hooks are left alone.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::store::Catalog;
use super::{
    builtin, check_authority, digest, Code, CompositionError, Definition, Id, McpParams, Modules,
    Persona, Scope, Selection, SAFETY_HOOKS,
};
use crate::config::{BoundClaudeHooks, Config};
use crate::tool::Registry;

/// What this machine offers a composition to select from, gathered by the front end.
#[derive(Debug, Clone, Default)]
pub struct Available {
    /// Tool names the configuration enables (built-ins and the delegation tools).
    pub tools: Vec<String>,
    pub skills: Vec<String>,
    /// MCP server names, each with whether the user authorised it (declared outside the
    /// project's own files, or a project server with a stored launch grant).
    pub mcp_servers: Vec<(String, bool)>,
    /// Hook events the configuration has hooks for.
    pub hooks: Vec<String>,
    pub commands: Vec<String>,
}

impl Available {
    /// One line per selected ID this machine lacks, for import previews.
    pub fn missing(&self, definition: &Definition) -> Vec<String> {
        let mut lines = Vec::new();
        let servers: Vec<String> = self.mcp_servers.iter().map(|(n, _)| n.clone()).collect();
        for (group, selection, have) in [
            ("tool", &definition.modules.tools, &self.tools),
            ("skill", &definition.modules.skills, &self.skills),
            ("MCP server", &definition.modules.mcp_servers, &servers),
            ("command", &definition.modules.commands, &self.commands),
        ] {
            if let Selection::Only(ids) = selection {
                for id in ids.iter().filter(|id| !have.contains(id)) {
                    lines.push(format!("missing {group} `{id}` (not available here)"));
                }
            }
        }
        lines
    }
}

/// A conversation's binding, kept in its session header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binding {
    /// The canonical ID, e.g. `user:my-agent`.
    pub id: String,
    pub revision: u64,
    /// The definition's display name at binding, for `/status` and the session lists (a
    /// binding written before names were recorded has none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The persona as resolved at binding; later edits of the definition do not follow.
    pub persona: Persona,
    pub persona_digest: String,
    /// Every group as an explicit list: inherited groups were resolved once, at binding.
    pub modules: Modules,
    pub modules_digest: String,
    /// The workspace of a project binding; it cannot continue anywhere else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// Parameters for selected MCP servers (references only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mcp: BTreeMap<String, McpParams>,
    /// The MCP tool contracts pinned at binding: tool name to a digest of its schema.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mcp_contracts: BTreeMap<String, String>,
    /// The definition itself chose `view_image` (as `builtin:minimal` does), so the model must
    /// read images; an inherited tool list that happens to hold it asks nothing of the model.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub needs_vision: bool,
    /// Came from a session archive (`reasonix session import`): nothing in it is trusted, so
    /// it continues only where [`check_imported`] finds its composition here.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub imported: bool,
    /// The skill files frozen at binding (`retain`), which the conversation reads instead of
    /// the skills' current files. A binding written before bundles existed has none and
    /// reads the current files, as it always did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retained: Option<super::retain::Retained>,
}

impl Binding {
    /// The scope its ID names.
    pub fn scope(&self) -> Option<Scope> {
        Id::parse(&self.id).ok().map(|id| id.scope)
    }

    /// Whether the binding's tools need a model that reads images.
    pub fn needs_vision(&self) -> bool {
        self.needs_vision
    }

    /// Whether the recorded digests are those of the recorded persona and modules: a
    /// binding read from an archive is refused when they are not.
    pub fn digests_match(&self) -> bool {
        self.persona_digest == digest(&self.persona)
            && self.modules_digest == digest(&(&self.modules, &self.mcp))
            && self
                .retained
                .as_ref()
                .is_none_or(super::retain::Retained::digest_matches)
    }

    /// Whether the binding starts MCP servers at all.
    pub fn uses_mcp(&self) -> bool {
        !matches!(&self.modules.mcp_servers, Selection::Only(ids) if ids.is_empty())
    }
}

/// What `--agent-composition ID` chose: `None` for the ordinary configuration
/// (`builtin:general`, or `default` with no saved default).
pub fn choose(
    catalog: &Catalog,
    reference: &str,
) -> Result<Option<(Id, Definition)>, CompositionError> {
    let reference = reference.trim();
    let text = if reference == "default" {
        match catalog.default_id() {
            Some(id) => id,
            None => return Ok(None),
        }
    } else {
        reference.to_string()
    };
    let id = Id::parse(&text)?;
    if id.scope == Scope::Builtin && id.name == builtin::GENERAL {
        return Ok(None);
    }
    let definition = catalog.get(&id).map_err(|e| {
        if reference == "default" {
            CompositionError::new(
                Code::Unavailable,
                format!(
                    "the saved default `{text}` is not available ({e}); choose another with \
                     `reasonix agent default ID`"
                ),
            )
        } else {
            e
        }
    })?;
    Ok(Some((id, definition)))
}

/// Resolves `definition` against `available` into a binding. Inherited groups become the
/// available lists; a project definition may only select MCP servers the user authorised.
pub fn bind(
    id: &Id,
    definition: &Definition,
    available: &Available,
    workspace: &Path,
) -> Result<Binding, CompositionError> {
    check_authority(id.scope, definition)?;
    let unavailable =
        |what: String| CompositionError::new(Code::Unavailable, format!("{id}: {what}"));
    let resolve = |selection: &Selection, have: &[String]| match selection {
        Selection::Inherit => Selection::Only(have.to_vec()),
        Selection::Only(ids) => Selection::Only(ids.clone()),
    };
    let servers: Vec<String> = available
        .mcp_servers
        .iter()
        .map(|(n, _)| n.clone())
        .collect();
    let modules = Modules {
        tools: resolve(&definition.modules.tools, &available.tools),
        skills: resolve(&definition.modules.skills, &available.skills),
        mcp_servers: resolve(&definition.modules.mcp_servers, &servers),
        hooks: resolve(&definition.modules.hooks, &available.hooks),
        commands: resolve(&definition.modules.commands, &available.commands),
    };
    if let Selection::Only(ids) = &modules.mcp_servers {
        for name in ids {
            match available.mcp_servers.iter().find(|(n, _)| n == name) {
                None => {
                    return Err(unavailable(format!(
                        "MCP server `{name}` is not configured here"
                    )))
                }
                Some((_, false)) if id.scope == Scope::Project => {
                    return Err(unavailable(format!(
                        "a project composition may only select MCP servers you authorised; \
                         `{name}` is declared by the project itself and has no launch grant \
                         for this workspace (start it once in the chat and answer \"remember \
                         it\")"
                    )))
                }
                _ => {}
            }
        }
    }
    if let Selection::Only(ids) = &modules.skills {
        if let Some(name) = ids.iter().find(|s| !available.skills.contains(s)) {
            return Err(unavailable(format!("skill `{name}` is not available here")));
        }
    }
    let persona = definition.persona.clone();
    Ok(Binding {
        id: id.to_string(),
        revision: definition.revision,
        name: definition.name.clone(),
        persona_digest: digest(&persona),
        persona,
        modules_digest: digest(&(&modules, &definition.mcp)),
        modules,
        workspace: (id.scope == Scope::Project).then(|| workspace.display().to_string()),
        mcp: definition.mcp.clone(),
        mcp_contracts: BTreeMap::new(),
        needs_vision: matches!(&definition.modules.tools, Selection::Only(ids)
            if ids.iter().any(|t| t == "view_image")),
        imported: false,
        retained: None,
    })
}

/// Checks a binding can run here: a project binding only in its workspace and without
/// launch overrides (an old one is history only), and a model that reads images when the
/// binding's tools need one.
pub fn check_runnable(
    binding: &Binding,
    config: &Config,
    provider: &str,
    model: &str,
    workspace: &Path,
) -> Result<(), CompositionError> {
    let unavailable =
        |what: String| CompositionError::new(Code::Unavailable, format!("{}: {what}", binding.id));
    if binding.scope() == Some(Scope::Project) {
        let here = workspace.display().to_string();
        if binding.workspace.as_deref() != Some(here.as_str()) {
            return Err(unavailable(format!(
                "this project binding belongs to {}; it cannot continue in {here}",
                binding.workspace.as_deref().unwrap_or("another workspace")
            )));
        }
        let as_definition = Definition {
            schema_version: super::SCHEMA_VERSION,
            modules: binding.modules.clone(),
            mcp: binding.mcp.clone(),
            ..Definition::default()
        };
        check_authority(Scope::Project, &as_definition).map_err(|e| {
            unavailable(format!(
                "the retained binding is refused ({}); it is history only",
                e.message
            ))
        })?;
    }
    if binding.needs_vision() && !model_has_vision(config, provider, model) {
        return Err(unavailable(format!(
            "needs a vision-capable model for view_image, and `{provider}/{model}` is not marked \
             `vision = true` in its [[providers]] entry; choose such a model with --model or \
             mark it, or use builtin:general"
        )));
    }
    Ok(())
}

/// An imported binding continues only where this machine's catalog has its composition,
/// and only with the launch parameters (MCP args, url, env, headers) that definition sets
/// here: an archive never changes how a server launches. Otherwise it is history only.
pub fn check_imported(binding: &Binding, catalog: &Catalog) -> Result<(), CompositionError> {
    let unavailable = |what: String| {
        CompositionError::new(
            Code::Unavailable,
            format!("{}: imported from an archive; {what}", binding.id),
        )
    };
    let id = Id::parse(&binding.id).map_err(|e| unavailable(e.message))?;
    let definition = catalog
        .get(&id)
        .map_err(|e| unavailable(format!("this machine has no such composition ({e})")))?;
    let launch = |p: &McpParams| {
        (
            p.args.clone(),
            p.url.clone(),
            p.env.clone(),
            p.headers.clone(),
        )
    };
    for (server, params) in &binding.mcp {
        let here = definition.mcp.get(server).map(launch).unwrap_or_default();
        if launch(params) != here {
            return Err(unavailable(format!(
                "its launch parameters for MCP server `{server}` differ from {id} here, and an \
                 archive is not trusted to change a launch"
            )));
        }
    }
    Ok(())
}

/// Whether the provider config marks `model` of `provider` as reading images: `vision =
/// true` on its `model_overrides.MODEL` table, else on the provider entry (the provider's own
/// rule, `ProviderConfig::vision`).
pub fn model_has_vision(config: &Config, provider: &str, model: &str) -> bool {
    config
        .providers
        .iter()
        .find(|p| p.name == provider)
        .is_some_and(|entry| entry.vision(model))
}

/// Edits `config` to what `binding` selected: its skills come from its retained bundle (when
/// it has one), its persona replaces the user's, its tool list becomes `[tools] enabled`, unselected skills are disabled, unselected MCP servers
/// and non-safety hooks are dropped and MCP parameters applied. Permission rules and the
/// safety hooks stay as they are.
pub fn apply(binding: &Binding, config: &mut Config, available_skills: &[String]) {
    let text = |s: &str| (!s.is_empty()).then(|| s.to_string());
    if let Some(retained) = &binding.retained {
        let dir = super::retain::bundle_dir(&config.home, retained);
        // The non-blocking hooks as they were at binding, running the bundle's copies. An
        // archive's never run: an imported binding keeps this machine's own hooks.
        if !binding.imported {
            config
                .hooks
                .retain(|h| SAFETY_HOOKS.contains(&h.event.as_str()));
            config.hooks.extend(retained.hook_configs(&dir));
            config.bound_claude_hooks = BoundClaudeHooks::Retained;
        }
        config.skills.retained = Some(dir);
        config.skills.retained_untrusted = binding.imported;
    }
    config.agent.persona_prefix = text(&binding.persona.prefix);
    config.agent.persona_suffix = text(&binding.persona.suffix);
    if let Selection::Only(tools) = &binding.modules.tools {
        if !tools.is_empty() {
            config.tools.enabled = tools.clone();
        }
    }
    if let Selection::Only(skills) = &binding.modules.skills {
        for name in available_skills.iter().filter(|s| !skills.contains(s)) {
            if !config.skills.disabled_skills.contains(name) {
                config.skills.disabled_skills.push(name.clone());
            }
        }
    }
    let servers = &binding.modules.mcp_servers;
    config.plugins.retain(|p| servers.keeps(&p.name));
    for plugin in &mut config.plugins {
        let Some(params) = binding.mcp.get(&plugin.name) else {
            continue;
        };
        if let Some(args) = &params.args {
            plugin.args = args.clone();
        }
        if let Some(url) = &params.url {
            plugin.url = Some(url.clone());
        }
        if let Some(env) = &params.env {
            plugin.env.extend(env.clone());
        }
        if let Some(headers) = &params.headers {
            plugin.headers.extend(headers.clone());
        }
        if let Some(secs) = params.call_timeout_seconds {
            plugin.call_timeout_seconds = Some(secs);
        }
        if let Some(secs) = params.startup_timeout_seconds {
            plugin.startup_timeout_seconds = secs;
        }
    }
    let hooks = &binding.modules.hooks;
    config
        .hooks
        .retain(|h| SAFETY_HOOKS.contains(&h.event.as_str()) || hooks.keeps(&h.event));
    if let (Selection::Only(events), BoundClaudeHooks::Live) = (hooks, &config.bound_claude_hooks) {
        config.bound_claude_hooks = BoundClaudeHooks::Events(events.clone());
    }
}

/// Narrows the assembled registry to the binding: tools outside its list go (an empty list
/// leaves none), MCP tools only of selected servers. A selected tool this build or
/// configuration does not offer is a dependency error, never a different tool set.
pub fn restrict(binding: &Binding, tools: &mut Registry) -> Result<(), CompositionError> {
    if let Selection::Only(wanted) = &binding.modules.tools {
        let names = tools.names();
        if let Some(missing) = wanted.iter().find(|w| !names.contains(w)) {
            return Err(CompositionError::new(
                Code::Unavailable,
                format!(
                    "{}: selects the tool `{missing}`, which this reasonix or its [tools] \
                     configuration does not offer",
                    binding.id
                ),
            ));
        }
        tools.retain(|name| name.starts_with("mcp__") || wanted.iter().any(|w| w == name));
    }
    let servers = &binding.modules.mcp_servers;
    tools.retain(|name| match mcp_server_of(name) {
        Some(server) => servers.keeps(server),
        None => true,
    });
    Ok(())
}

/// `mcp__SERVER__TOOL` → `SERVER`.
pub fn mcp_server_of(name: &str) -> Option<&str> {
    name.strip_prefix("mcp__")?.split("__").next()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn available() -> Available {
        Available {
            tools: vec!["bash".into(), "read".into(), "task".into()],
            skills: vec!["deploy".into(), "lint".into()],
            mcp_servers: vec![("user-docs".into(), true), ("repo-docs".into(), false)],
            hooks: vec!["Stop".into()],
            commands: vec!["ship".into()],
        }
    }

    fn definition(servers: Selection) -> Definition {
        Definition {
            schema_version: 1,
            revision: 3,
            persona: Persona {
                prefix: "P".into(),
                suffix: String::new(),
            },
            modules: Modules {
                skills: Selection::Only(vec!["lint".into()]),
                mcp_servers: servers,
                ..Modules::default()
            },
            ..Definition::default()
        }
    }

    #[test]
    fn inherited_groups_resolve_once_and_project_bindings_keep_their_workspace() {
        let id = Id::parse("user:a").unwrap();
        let b = bind(
            &id,
            &definition(Selection::Inherit),
            &available(),
            Path::new("/w"),
        )
        .unwrap();
        assert_eq!(b.modules.tools, Selection::Only(available().tools));
        assert_eq!(b.modules.skills, Selection::Only(vec!["lint".into()]));
        assert_eq!((b.revision, b.workspace.as_deref()), (3, None));
        let project = Id::parse("project:a").unwrap();
        let chosen = Selection::Only(vec!["user-docs".into()]);
        let b = bind(&project, &definition(chosen), &available(), Path::new("/w")).unwrap();
        assert_eq!(b.workspace.as_deref(), Some("/w"));
    }

    #[test]
    fn a_project_may_select_only_servers_the_user_authorised() {
        let project = Id::parse("project:a").unwrap();
        let repo = Selection::Only(vec!["repo-docs".into()]);
        let err = bind(
            &project,
            &definition(repo.clone()),
            &available(),
            Path::new("/w"),
        )
        .unwrap_err();
        assert_eq!(err.code, Code::Unavailable, "{err}");
        // The same selection is the user's own choice in a user definition.
        let user = Id::parse("user:a").unwrap();
        assert!(bind(&user, &definition(repo), &available(), Path::new("/w")).is_ok());
        let gone = Selection::Only(vec!["nowhere".into()]);
        assert_eq!(
            bind(&user, &definition(gone), &available(), Path::new("/w"))
                .unwrap_err()
                .code,
            Code::Unavailable
        );
    }

    #[test]
    fn applying_keeps_safety_hooks_and_permissions_whatever_the_selection() {
        let mut config = Config::default();
        config.permissions.deny = vec!["Bash(rm:*)".into()];
        for event in [
            "PreToolUse",
            "UserPromptSubmit",
            "PermissionRequest",
            "Stop",
            "PostToolUse",
        ] {
            config.hooks.push(crate::config::file::HookConfig {
                event: event.into(),
                command: "true".into(),
                ..Default::default()
            });
        }
        let id = Id::parse("user:a").unwrap();
        let mut d = definition(Selection::Only(Vec::new()));
        d.modules.hooks = Selection::Only(vec!["Stop".into()]);
        let b = bind(&id, &d, &available(), Path::new("/w")).unwrap();
        let before = config.permissions.clone();
        apply(&b, &mut config, &available().skills);
        let events: Vec<&str> = config.hooks.iter().map(|h| h.event.as_str()).collect();
        assert_eq!(
            events,
            [
                "PreToolUse",
                "UserPromptSubmit",
                "PermissionRequest",
                "Stop"
            ]
        );
        assert_eq!(config.permissions, before);
        assert_eq!(config.skills.disabled_skills, ["deploy"]);
        assert_eq!(config.agent.persona_prefix.as_deref(), Some("P"));
        // An empty hook selection still keeps the guards.
        d.modules.hooks = Selection::Only(Vec::new());
        let b = bind(&id, &d, &available(), Path::new("/w")).unwrap();
        apply(&b, &mut config, &[]);
        assert_eq!(config.hooks.len(), 3);
    }

    #[test]
    fn a_retained_project_binding_with_launch_overrides_is_history_only() {
        let mut b = bind(
            &Id::parse("project:a").unwrap(),
            &definition(Selection::Only(vec!["user-docs".into()])),
            &available(),
            Path::new("/w"),
        )
        .unwrap();
        let config = Config::default();
        assert!(check_runnable(&b, &config, "p", "m", Path::new("/w")).is_ok());
        let err = check_runnable(&b, &config, "p", "m", Path::new("/elsewhere")).unwrap_err();
        assert_eq!(err.code, Code::Unavailable);
        b.mcp.insert(
            "user-docs".into(),
            McpParams {
                args: Some(vec!["--evil".into()]),
                ..McpParams::default()
            },
        );
        let err = check_runnable(&b, &config, "p", "m", Path::new("/w")).unwrap_err();
        assert_eq!(err.code, Code::Unavailable, "{err}");
    }
}
