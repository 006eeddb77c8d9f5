//! Opening a headless session (`reasonix run`, `reasonix subagent try|run`, Claude's print
//! mode) from [`SessionOptions`] and the loaded configuration: the model (or a subagent
//! profile's), the key, the composition binding, the planner, the registry, the MCP servers
//! the binding keeps and their pinning, the typed prompt through the chat's input path, the
//! session, the gate and the agent. The front end fills the options from its flags, reads the
//! prompt, shows the events and reports the outcome; nothing here prints.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::assemble::{self, Attach, PermissionFlags, PromptFlags, SessionChoice};
use super::build::{self, Built, Parts};
use super::Error;
use crate::agent::events::{Event, EventSink, NoticeLevel};
use crate::agent::fallback::Fallback;
use crate::agent::runner::Budget;
use crate::command::input::{self, Input};
use crate::command::{custom, Catalog, CommandError};
use crate::config::Config;
use crate::mcp::{self, McpHost, McpOptions};
use crate::provider::{self, ProviderSettings};

/// A subagent profile run from the command line.
#[derive(Debug, Clone)]
pub struct ProfileRun {
    pub name: String,
    /// `try`: the read-only registry, no subagents of its own.
    pub read_only: bool,
}

/// What a front end that drives the headless session differently sets (Claude print mode):
/// who answers the gate's asks, which built-in tools are offered, more write roots and MCP
/// servers, which Claude Code settings files are read.
#[derive(Default)]
pub struct FrontEnd {
    /// Answers the gate's asks; `None` is `run`'s headless rule (an ask is allowed).
    pub approver: Option<Box<dyn Fn() -> Box<dyn crate::permission::Approver>>>,
    /// Only these built-in tools (our names) are offered; MCP tools are not affected.
    pub tools: Option<Vec<String>>,
    /// More directories the file tools and the shell may write to.
    pub add_dirs: Vec<PathBuf>,
    /// More MCP servers (from the user, so as trusted as the user's config).
    pub mcp_servers: Vec<crate::config::PluginConfig>,
    /// Only the servers of `mcp_servers` start (`--strict-mcp-config`).
    pub strict_mcp: bool,
    /// Which Claude Code settings files are read (`--setting-sources`); `None`: all.
    pub setting_sources: Option<Vec<String>>,
    /// Where `type = "sdk"` MCP servers live: the Agent SDK's control channel.
    pub mcp_channel: Option<Arc<dyn crate::mcp::host_channel::HostChannel>>,
    /// The prompt is sent as it is, not through the chat's input path (the Agent SDK's
    /// turns, which arrive later on stdin).
    pub prompt_as_is: bool,
    /// The id a new or forked session takes (`--session-id`); `None`: a fresh one.
    pub session_id: Option<String>,
}

/// What a headless front end asks of its session, from its flags.
#[derive(Debug, Default)]
pub struct SessionOptions {
    /// `--model REF`.
    pub model: Option<String>,
    /// `--fallback-model REF`: the model a turn goes on with when `model` is overloaded.
    pub fallback_model: Option<String>,
    /// `--effort LEVEL`.
    pub effort: Option<String>,
    /// `--replay FILE`: model replies from a recording instead of the network.
    pub replay: Option<PathBuf>,
    /// `--record FILE`: every provider exchange saved.
    pub record: Option<PathBuf>,
    /// `--agent-composition ID` for a new conversation.
    pub composition: Option<String>,
    /// A new session, the newest, or one by reference.
    pub session: SessionChoice,
    /// In place or forked.
    pub attach: Attach,
    /// `reasonix subagent try|run NAME`: the run is that profile's.
    pub profile: Option<ProfileRun>,
    /// `--system-prompt`, `--append-system-prompt` (the binding is filled in here).
    pub prompt_flags: PromptFlags,
    /// The posture and the command line's allow and deny rules.
    pub permissions: PermissionFlags,
    /// `--trust-project-mcp`: project MCP servers launch without a grant.
    pub trust_project_mcp: bool,
    /// `--max-steps`; `None`: `agent.max_steps_headless` (0 there lifts the bound).
    pub max_steps: Option<u32>,
    /// `--max-tokens-total`, `--max-budget-usd`.
    pub budget: Budget,
    /// The prompt as typed: a custom command, an MCP prompt and `@` references are
    /// resolved here, before the session exists.
    pub prompt: String,
    /// The command that starts a session, for the hint when there is none to continue
    /// (`run PROMPT`).
    pub command: &'static str,
}

/// An open headless session, ready for its first turn.
pub struct Opened {
    /// The agent, its tool context, the subagents' tally and the tools offered.
    pub built: Built,
    /// The executor's model.
    pub settings: ProviderSettings,
    /// The planner's model, when the run pairs one with the executor.
    pub planner: Option<ProviderSettings>,
    /// The prompt to send: the typed one with its commands and references resolved.
    pub prompt: String,
    /// The session's MCP servers: they run while this is kept, and stop when it is dropped.
    pub mcp: mcp::Host,
    /// The configuration the session runs under (the front end's additions applied).
    pub config: Config,
}

/// Opens the session `options` ask for in `cwd`, under `config` (its warnings already
/// shown), with `front`'s changes. Notices (unknown tools, MCP start-up, the prompt's, a
/// repaired session, hooks) are warnings on `sink`.
pub fn open(
    mut config: Config,
    cwd: &Path,
    options: &SessionOptions,
    front: &FrontEnd,
    sink: &mut dyn EventSink,
) -> Result<Opened, Error> {
    apply_front_end(front, &mut config)?;
    let profile = match &options.profile {
        Some(run) => Some(find_profile(&config, cwd, &run.name)?),
        None => None,
    };
    // A plain run takes the options' model and effort; a profile run ranks them as a `task`
    // call's (§3.10), below `agent.subagent_models[NAME]`.
    let (model, effort) = match &profile {
        None => (options.model.clone(), options.effort.clone()),
        Some(profile) => {
            let call = crate::tool::delegate::TaskSpec {
                model: options.model.clone(),
                effort: options.effort.clone(),
                ..Default::default()
            };
            super::delegate::choose(&config, Some(profile), &call)
        }
    };
    let read_only = options.profile.as_ref().is_some_and(|p| p.read_only)
        || profile
            .as_ref()
            .is_some_and(|p| crate::skill::builtin::is_read_only(p) || !p.trusted);
    let mut settings = config.resolve_model(model.as_deref())?;
    if let Some(replay) = &options.replay {
        settings.kind = "replay".into();
        settings.replay_file = Some(replay.clone());
    }
    settings.record_file = options.record.clone();
    assemble::check_key(&settings)?;
    let fallback = match &options.fallback_model {
        Some(name) => Some(fallback(&config, name, &settings, options)?),
        None => None,
    };
    if fallback.is_some() {
        crate::agent::fallback::hand_over_early(&mut settings.retry);
    }
    let (mut binding, choice) = super::binding::prepare(
        options.composition.as_deref(),
        &options.session,
        &mut config,
        &settings,
        cwd,
    )?
    .runnable()?;
    // A subagent profile run is one agent; a plain run pairs with the planner model if any.
    let planner = match &profile {
        None => assemble::planner_settings(&config, &settings)?,
        Some(_) => None,
    };
    let provider_handle = provider::build(settings.clone())?;
    let mut tools = assemble::registry(&config, sink);
    let mcp_options = McpOptions {
        trust_project: options.trust_project_mcp,
        host: front.mcp_channel.clone(),
        ..McpOptions::default()
    };
    let mut warn = |message| {
        sink.emit(Event::Notice {
            level: NoticeLevel::Warning,
            message,
        })
    };
    let handle = if front.strict_mcp {
        // Only the command line's servers: `.mcp.json` and the config's are not launched.
        let keep = front.mcp_servers.iter().map(|s| s.name.clone()).collect();
        let only = McpOptions {
            keep: Some(keep),
            ..mcp_options
        };
        mcp::start(&config, cwd, only, &mut warn)
    } else {
        super::binding::start_mcp(binding.as_ref(), &config, cwd, mcp_options, &mut warn)
    };
    handle.register(&mut tools);
    if let Some(binding) = binding.as_mut() {
        let fresh = options.session == SessionChoice::New;
        super::binding::pin_mcp(binding, fresh, &tools)?;
    }
    let mcp = mcp::Host::new(handle);
    let keep = binding.as_ref().map(|b| &b.modules.commands);
    let sandbox = crate::sandbox::Policy::new(crate::sandbox::Settings::from_config(&config, cwd)?);
    let prompt = if front.prompt_as_is {
        options.prompt.clone()
    } else {
        prepare_prompt(&options.prompt, cwd, &sandbox, &config, &mcp, keep, sink)?
    };
    let flags = PromptFlags {
        system_prompt: options
            .prompt_flags
            .system_prompt
            .clone()
            .or_else(|| profile.as_ref().map(|p| p.body.trim().to_string())),
        append_system_prompt: options.prompt_flags.append_system_prompt.clone(),
        binding: binding.clone(),
        id: front.session_id.clone(),
    };
    let session = assemble::open_session(
        &choice,
        options.attach,
        &flags,
        &config,
        &settings,
        cwd,
        options.command,
    )?;
    let gate = Arc::new(
        assemble::gate(
            &config,
            cwd,
            &options.permissions,
            front.approver.as_ref().map(|f| f()),
        )?
        .with_mcp(mcp.handle().tool_policies())
        .with_reviewer(assemble::reviewer(&config, &settings)?),
    );
    if options.budget.max_cost_usd.is_some() && settings.prices.is_none() {
        return Err(Error::Usage(format!(
            "--max-budget-usd needs the model's prices, and `{}` has none; set `prices` for it in the config or bound the run with --max-tokens-total",
            settings.model
        )));
    }
    // Nobody watches a headless run: it has a bound unless the config lifts it (0).
    let headless_steps = config.agent.max_steps_headless;
    let max_steps = options
        .max_steps
        .or((headless_steps > 0).then_some(headless_steps));
    let mut built = build::agent(
        Parts {
            config: &config,
            settings: &settings,
            cwd,
            planner: planner.as_ref(),
            provider: provider_handle,
            tools,
            binding: binding.as_ref(),
            mcp: Some(Box::new(mcp.handle().tool_watch())),
            gate,
            session,
            max_steps,
            effort,
            budget: options.budget.clone(),
            read_only,
            only_tools: front.tools.as_deref(),
        },
        sink,
    )?;
    if let Some(fallback) = &fallback {
        built.children.set_fallback(fallback.clone());
    }
    built.runner.options_mut().fallback = fallback;
    Ok(Opened {
        built,
        settings,
        planner,
        prompt,
        mcp,
        config,
    })
}

/// `--fallback-model NAME`, resolved as `--model` is, and its provider: a different model,
/// with its key, recorded beside the primary under `--record`.
fn fallback(
    config: &Config,
    name: &str,
    primary: &ProviderSettings,
    options: &SessionOptions,
) -> Result<Fallback, Error> {
    if options.replay.is_some() {
        return Err(Error::Usage(
            "--fallback-model cannot be used with --replay: a recording holds one model's replies"
                .into(),
        ));
    }
    let mut settings = config.resolve_model(Some(name))?;
    if settings.name == primary.name && settings.model == primary.model {
        return Err(Error::Usage(format!(
            "--fallback-model `{name}` is the model the run already uses (`{}`); name a different one",
            primary.model
        )));
    }
    if options.budget.max_cost_usd.is_some() && settings.prices.is_none() {
        return Err(Error::Usage(format!(
            "--max-budget-usd needs the prices of the fallback model too, and `{}` has none; set `prices` for it in the config or bound the run with --max-tokens-total",
            settings.model
        )));
    }
    settings.record_file = options.record.clone();
    assemble::check_key(&settings)?;
    let prices = settings.prices;
    Ok(Fallback {
        provider: Arc::from(provider::build(settings)?),
        prices,
    })
}

/// The front end's additions to the loaded configuration: write roots and MCP servers given
/// on the command line, which are the user's own and as trusted as the user's config.
fn apply_front_end(front: &FrontEnd, config: &mut Config) -> Result<(), Error> {
    for dir in &front.add_dirs {
        let real = dir
            .canonicalize()
            .ok()
            .filter(|d| d.is_dir())
            .ok_or_else(|| {
                Error::Usage(format!("--add-dir: `{}` is not a directory", dir.display()))
            })?;
        config.sandbox.allow_write.push(real);
    }
    if front.strict_mcp {
        config.plugins.clear();
    }
    for server in &front.mcp_servers {
        config.plugins.retain(|p| p.name != server.name);
        config.plugins.push(server.clone());
    }
    Ok(())
}

/// The prompt through the chat's input path: a custom command or an MCP prompt renders and
/// `@` references attach. A built-in needs the chat, and a command that cannot run is a usage
/// error, so a script never sends the model a half-understood prompt.
fn prepare_prompt(
    prompt: &str,
    cwd: &Path,
    sandbox: &crate::sandbox::Policy,
    config: &Config,
    mcp: &dyn McpHost,
    keep: Option<&crate::composition::Selection>,
    sink: &mut dyn EventSink,
) -> Result<String, Error> {
    let mut commands = custom::load_for(config, cwd);
    if let Some(keep) = keep {
        commands.commands.retain(|c| keep.keeps(&c.name));
    }
    let catalog = Catalog::new(commands.commands, mcp.prompts());
    let prepared = match input::interpret(prompt, &catalog) {
        Some(Ok(Input::Message(message))) => message.prepare(cwd, sandbox, mcp),
        Some(Ok(Input::Builtin(builtin, _))) => Err(CommandError::NeedsChat(builtin)),
        Some(Ok(Input::Profile { name, .. })) => Err(CommandError::ProfileHere(name)),
        Some(Err(err)) => Err(err),
        // The front end refuses a blank prompt; there is nothing to interpret.
        None => return Ok(prompt.to_string()),
    };
    let turn = prepared.map_err(|e| Error::Usage(e.to_string()))?;
    let notices = commands.notices.into_iter().chain(catalog.notices);
    for message in notices.chain(turn.notices) {
        sink.emit(Event::Notice {
            level: NoticeLevel::Warning,
            message,
        });
    }
    Ok(turn.text)
}

/// A subagent profile by name: a `runAs: subagent` skill of this workspace, then a built-in.
fn find_profile(config: &Config, cwd: &Path, name: &str) -> Result<crate::skill::Skill, Error> {
    let store = super::skills::session_store(config, cwd);
    match store.get(name) {
        Some(skill) if skill.run_as == crate::skill::RunAs::Subagent => Ok(skill.clone()),
        Some(_) => Err(Error::Usage(format!(
            "`{name}` is an inline skill, not a subagent profile (`reasonix subagent list` shows them)"
        ))),
        None => crate::skill::builtin::profile(name).ok_or_else(|| {
            Error::Usage(format!(
                "there is no subagent profile `{name}`; `reasonix subagent list` shows them"
            ))
        }),
    }
}
