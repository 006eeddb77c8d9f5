//! The agent composition step every front end shares for `--agent-composition ID` and a
//! resumed conversation: choose, resolve against this machine, check it can run, apply it to
//! the configuration (or restore a resumed session's binding, or open it as history only),
//! then start only the MCP servers it keeps and pin their tool contracts.

use std::path::Path;

use super::assemble::{self, SessionChoice};
use super::Error;
use crate::agent::session;
use crate::composition::resolve::{self, Available, Binding};
use crate::composition::retain;
use crate::composition::store::Catalog;
use crate::composition::{Code, CompositionError, Selection};
use crate::config::Config;
use crate::provider::ProviderSettings;
use crate::tool::Registry;

/// What this machine offers a composition: the enabled tools, skills, MCP servers (with
/// whether the user authorised each: declared in the user's own config, or a project server
/// whose launch the user granted for this workspace and this exact launch identity), hook
/// events and custom commands.
pub fn available(config: &Config, cwd: &Path) -> Available {
    let enabled = &config.tools.enabled;
    let wanted = |name: &str| enabled.is_empty() || enabled.iter().any(|n| n == name);
    let skills = crate::app::skills::session_store(config, cwd);
    let mut tools: Vec<String> = crate::tool::builtin::all()
        .iter()
        .map(|t| t.name().to_string())
        .chain(
            ["task", "read_only_task", "fleet", "parallel_tasks"]
                .into_iter()
                .map(str::to_string),
        )
        .filter(|n| wanted(n))
        .collect();
    if !skills.skills.is_empty() {
        tools.push("skill".into());
        if wanted("read_only_skill") {
            tools.push("read_only_skill".into());
        }
    }
    let declared = crate::mcp::config::declared(config, cwd);
    let grants = crate::mcp::grants::GrantStore::new(&config.home);
    let authorised = |s: &crate::mcp::config::ServerSpec| {
        !s.origin.needs_grant() || grants.is_granted(cwd, &s.name, &s.identity_hash())
    };
    let mut hooks: Vec<String> = Vec::new();
    let claude = crate::app::hooks::claude_hooks_to_retain(config, cwd, |_| true);
    for event in config.hooks.iter().chain(&claude).map(|h| &h.event) {
        if !hooks.contains(event) {
            hooks.push(event.clone());
        }
    }
    Available {
        tools,
        skills: skills.skills.iter().map(|s| s.name.clone()).collect(),
        mcp_servers: declared
            .servers
            .iter()
            .map(|s| (s.name.clone(), authorised(s)))
            .collect(),
        hooks,
        commands: crate::command::custom::load_for(config, cwd)
            .commands
            .into_iter()
            .map(|c| c.name)
            .collect(),
    }
}

/// The one check every conversation passes before it runs: a new one, or one continued by
/// `--continue`, `--resume` or the chat's `/resume`. A resumed session keeps its retained
/// binding (a different `--agent-composition` is `agent_composition.locked`), which must
/// still run here ([`resolve::check_runnable`], and [`resolve::check_imported`] for an
/// archive's); one that cannot is [`Prepared::history_only`]. A new session is bound to what
/// `flag` chooses. The binding is applied to `config`; `None` keeps the ordinary configuration.
pub fn prepare(
    flag: Option<&str>,
    choice: &SessionChoice,
    config: &mut Config,
    settings: &ProviderSettings,
    cwd: &Path,
) -> Result<Prepared, Error> {
    let catalog = Catalog::new(&config.home, cwd);
    let existing = match choice {
        SessionChoice::New => None,
        SessionChoice::Newest => {
            session::latest(&crate::config::paths::sessions_dir(&config.home, cwd))
        }
        SessionChoice::Reference(reference) => {
            Some(assemble::find_session(reference, config, cwd)?)
        }
    };
    if let Some(path) = existing {
        return resumed(&path, flag, &catalog, config, settings, cwd);
    }
    let fresh = |binding| Prepared {
        binding,
        session: choice.clone(),
        history_only: None,
    };
    let Some(flag) = flag else {
        return Ok(fresh(None));
    };
    let Some((id, definition)) = resolve::choose(&catalog, flag)? else {
        return Ok(fresh(None));
    };
    // Gathered only for a binding: an ordinary run reads no extra directories.
    let available = available(config, cwd);
    let mut binding = resolve::bind(&id, &definition, &available, cwd)?;
    resolve::check_runnable(&binding, config, &settings.name, &settings.model, cwd)?;
    check_tools(&binding, &available)?;
    // Frozen last, once nothing else refuses the binding: a refused one leaves no bundle.
    if let Selection::Only(skills) = &binding.modules.skills {
        let store = crate::app::skills::session_store(config, cwd);
        let mut hooks: Vec<_> = config
            .hooks
            .iter()
            .filter(|h| {
                !crate::composition::SAFETY_HOOKS.contains(&h.event.as_str())
                    && binding.modules.hooks.keeps(&h.event)
            })
            .cloned()
            .collect();
        // Claude Code's settings files are a source of hooks like `[[hooks]]`: their
        // selected non-blocking hooks are retained too, and no longer read live.
        hooks.extend(crate::app::hooks::claude_hooks_to_retain(
            config,
            cwd,
            |event| binding.modules.hooks.keeps(event),
        ));
        let selected = retain::Selected {
            skills,
            store: &store,
            hooks: &hooks,
            cwd,
            user_home: std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(Into::into),
        };
        binding.retained = Some(retain::freeze(&binding.id, &selected, &config.home)?);
    }
    resolve::apply(&binding, config, &available.skills);
    Ok(fresh(Some(binding)))
}

/// A binding's tool list becomes `[tools] enabled` when applied, so it may only name tools
/// this configuration offers: a retained or foreign binding cannot turn on a tool the user
/// left out.
fn check_tools(binding: &Binding, available: &Available) -> Result<(), CompositionError> {
    if let Selection::Only(tools) = &binding.modules.tools {
        if let Some(missing) = tools.iter().find(|t| !available.tools.contains(t)) {
            return Err(CompositionError::new(
                Code::Unavailable,
                format!(
                    "{}: selects the tool `{missing}`, which this reasonix or its [tools] \
                     configuration does not offer; no other tool set is substituted",
                    binding.id
                ),
            ));
        }
    }
    Ok(())
}

/// [`prepare`] for the session at `path`, which is continued.
fn resumed(
    path: &Path,
    flag: Option<&str>,
    catalog: &Catalog,
    config: &mut Config,
    settings: &ProviderSettings,
    cwd: &Path,
) -> Result<Prepared, Error> {
    let (header, _) = session::load(path)?;
    // What the flag names; `builtin:general` stands for no binding.
    let general = format!("builtin:{}", crate::composition::builtin::GENERAL);
    let chosen = match flag {
        Some(flag) => Some(
            resolve::choose(catalog, flag)?
                .map_or_else(|| general.clone(), |(id, _)| id.to_string()),
        ),
        None => None,
    };
    // The file checked is the file opened: `--continue` does not look for the newest again.
    let mut prepared = Prepared {
        binding: None,
        session: SessionChoice::Reference(path.display().to_string()),
        history_only: None,
    };
    let Some(mut binding) = header.composition else {
        if chosen.is_some_and(|c| c != general) {
            return Err(locked("the ordinary configuration (no composition)"));
        }
        return Ok(prepared);
    };
    // A file reasonix did not write under the home (one a repository ships, `--resume
    // ./x.jsonl`) says what it likes about its binding, launch parameters included: it is
    // checked as an archive's is, never trusted as the user's own.
    if !super::session_archive::kept_in_home(&config.home, path) {
        binding.imported = true;
    }
    if chosen.as_ref().is_some_and(|c| *c != binding.id) {
        return Err(locked(&binding.id));
    }
    let checked = if binding.imported {
        resolve::check_imported(&binding, catalog)
    } else {
        Ok(())
    };
    let checked = checked.and_then(|()| {
        resolve::check_runnable(&binding, config, &settings.name, &settings.model, cwd)
    });
    // Its skills are the files frozen at binding: they must still be there, unchanged.
    let checked = checked.and_then(|()| match &binding.retained {
        Some(retained) => retain::verify(&config.home, retained)
            .map(|_| ())
            .map_err(|e| CompositionError::new(Code::Unavailable, format!("{}: {e}", binding.id))),
        None => Ok(()),
    });
    // What it may use here, its skills being the frozen ones: a skill deleted since binding
    // still leaves it the `skill` tool.
    let here = match &binding.retained {
        Some(retained) => {
            let mut frozen = config.clone();
            frozen.skills.retained = Some(retain::bundle_dir(&config.home, retained));
            frozen.skills.retained_untrusted = binding.imported;
            available(&frozen, cwd)
        }
        None => available(config, cwd),
    };
    match checked.and_then(|()| check_tools(&binding, &here)) {
        Err(err) => prepared.history_only = Some(history_only(&header.id, err)),
        Ok(()) => {
            resolve::apply(&binding, config, &here.skills);
            prepared.binding = Some(binding);
        }
    }
    Ok(prepared)
}

/// What [`prepare`] found.
#[derive(Debug)]
pub struct Prepared {
    /// The binding applied to the configuration; `None`: the ordinary configuration.
    pub binding: Option<Binding>,
    /// The session to open: a new one, or the checked session's file.
    pub session: SessionChoice,
    /// The resumed conversation's retained binding is unavailable or untrusted here: it can
    /// be read as history but cannot continue, and nothing was applied to the configuration.
    pub history_only: Option<CompositionError>,
}

impl Prepared {
    /// For a front end that cannot show a conversation it may not continue (`run`, the plain
    /// chat, the browser): a history-only conversation is refused.
    pub fn runnable(self) -> Result<(Option<Binding>, SessionChoice), Error> {
        match self.history_only {
            Some(err) => Err(err.into()),
            None => Ok((self.binding, self.session)),
        }
    }
}

fn locked(bound: &str) -> Error {
    CompositionError::new(
        Code::Locked,
        format!(
            "this conversation is bound to {bound}; a binding is chosen before the first prompt \
             and kept. Start a new conversation with another composition"
        ),
    )
    .into()
}

fn history_only(session: &str, err: CompositionError) -> CompositionError {
    CompositionError::new(
        err.code,
        format!(
            "{}; session {session} can be read as history but cannot continue",
            err.message
        ),
    )
}

/// After the MCP tools are registered: a new binding pins their contracts; a restored one
/// refuses to continue when they changed since.
pub fn pin_mcp(binding: &mut Binding, fresh: bool, tools: &Registry) -> Result<(), Error> {
    let now = crate::composition::pin::contracts(tools);
    let now: std::collections::BTreeMap<String, String> = now
        .into_iter()
        .filter(|(name, _)| {
            resolve::mcp_server_of(name).is_some_and(|s| binding.modules.mcp_servers.keeps(s))
        })
        .collect();
    if fresh {
        binding.mcp_contracts = now;
        return Ok(());
    }
    if now != binding.mcp_contracts {
        return Err(CompositionError::new(
            Code::Unavailable,
            format!(
                "{}: the MCP tool contracts changed since this conversation was bound; it can be \
                 read as history but cannot continue. Start a new conversation",
                binding.id
            ),
        )
        .into());
    }
    Ok(())
}

/// Starts the MCP servers of a conversation: a bound one only those its composition selects
/// (none at all for an empty selection), whatever `options` says; an unbound one every
/// declared server under the usual launch rules. Every front end without the chat's
/// background start goes through here, so none can forget the selection.
pub fn start_mcp(
    binding: Option<&Binding>,
    config: &Config,
    cwd: &Path,
    options: crate::mcp::McpOptions,
    warn: &mut dyn FnMut(String),
) -> crate::mcp::McpHandle {
    if binding.is_some_and(|b| !b.uses_mcp()) {
        return crate::mcp::McpHandle::default();
    }
    let options = crate::mcp::McpOptions {
        keep: mcp_keep(binding),
        ..options
    };
    crate::mcp::start(config, cwd, options, warn)
}

/// The MCP servers a run may start: a binding's selection (resolved to an explicit list at
/// binding), so an unselected server is never launched; `None` for an unbound run.
pub fn mcp_keep(binding: Option<&Binding>) -> Option<Vec<String>> {
    match &binding?.modules.mcp_servers {
        Selection::Only(servers) => Some(servers.clone()),
        Selection::Inherit => None,
    }
}

/// The MCP tool source of a run: a bound conversation's is pinned to its contracts.
pub fn tool_source(
    binding: Option<&Binding>,
    watch: Box<dyn crate::tool::source::ToolSource>,
    tools: &mut Registry,
) -> Box<dyn crate::tool::source::ToolSource> {
    match binding {
        Some(binding) => Box::new(crate::composition::pin::PinnedSource::guard(
            watch,
            tools,
            binding.modules.mcp_servers.clone(),
        )),
        None => watch,
    }
}

/// The interactive chat starts its MCP servers after the conversation is bound, so their
/// tools are pinned when they arrive: only selected servers' tools, each behind the switch a
/// changed catalog flips. A restored binding whose recorded contracts differ from what the
/// servers offer now is blocked at once, with a notice; a binding with none recorded yet gets
/// today's, for the chat to write into the session header.
pub fn pin_started(
    binding: &Binding,
    tools: Vec<std::sync::Arc<dyn crate::tool::Tool>>,
    watch: Box<dyn crate::tool::source::ToolSource>,
    notices: &mut Vec<String>,
) -> PinnedStart {
    let servers = &binding.modules.mcp_servers;
    let mut registry = Registry::new();
    for tool in tools {
        if resolve::mcp_server_of(tool.name()).is_some_and(|s| servers.keeps(s)) {
            registry.insert(tool);
        }
    }
    let now = crate::composition::pin::contracts(&registry);
    let source =
        crate::composition::pin::PinnedSource::guard(watch, &mut registry, servers.clone());
    if !binding.mcp_contracts.is_empty() && now != binding.mcp_contracts {
        source.block();
        notices.push(format!(
            "agent_composition.unavailable: {}: the MCP tool contracts changed since this \
             conversation was bound; its MCP tools are blocked. Start a new conversation to use \
             the new tools",
            binding.id
        ));
    }
    let tools = registry
        .names()
        .iter()
        .filter_map(|name| registry.get(name).cloned())
        .collect();
    let record = binding.mcp_contracts.is_empty() && !now.is_empty();
    PinnedStart {
        tools,
        source: Box::new(source),
        contracts: record.then_some(now),
    }
}

/// The interactive chat's MCP tools after [`pin_started`].
pub struct PinnedStart {
    pub tools: Vec<std::sync::Arc<dyn crate::tool::Tool>>,
    pub source: Box<dyn crate::tool::source::ToolSource>,
    /// Contracts to record in the session header (none were recorded at binding).
    pub contracts: Option<std::collections::BTreeMap<String, String>>,
}
