//! One conversation of a front end that holds many at once (the browser's): its model, its
//! composition binding (refused when it cannot continue here), the MCP servers that binding
//! keeps, started under the usual launch rules (no one answers a launch approval), the gate
//! with the front end's approver, the session and the agent. The same assembly as a headless
//! run, without a prompt; how the conversation is shown is the front end's.

use std::path::Path;
use std::sync::Arc;

use super::assemble::{self, Attach, PromptFlags, SessionChoice};
use super::build::{self, Parts};
use super::Error;
use crate::agent::driver::Runner;
use crate::agent::events::Event;
use crate::agent::runner::Budget;
use crate::command::custom::{self, Loaded};
use crate::composition::resolve::Binding;
use crate::config::Config;
use crate::mcp::{self, McpOptions};
use crate::permission::{Approver, PolicyGate, Posture};
use crate::provider::{self, ProviderSettings};

/// What the front end asks of one conversation.
#[derive(Debug, Clone)]
pub struct ConversationOptions {
    /// The model the page chose; `None`: the front end's.
    pub model: Option<String>,
    /// The composition a new conversation is bound to (`None`: the ordinary configuration;
    /// a resumed one keeps its own).
    pub composition: Option<String>,
    /// The stored session to continue, by id or path; `None`: a new one.
    pub resume: Option<String>,
    pub posture: Posture,
    /// `--effort LEVEL`.
    pub effort: Option<String>,
    /// `--trust-project-mcp`: project MCP servers launch without a grant.
    pub trust_project_mcp: bool,
}

/// An open conversation.
pub struct Conversation {
    pub runner: Runner,
    pub gate: Arc<PolicyGate>,
    /// Its MCP servers: they run while this is kept.
    pub mcp: Arc<mcp::Host>,
    /// The tools registered with the MCP servers', before a binding's restriction: which
    /// tools each server gave the conversation.
    pub registered: Vec<String>,
    /// What starting the MCP servers had to say.
    pub notices: Vec<String>,
    /// The custom commands the binding keeps, then the skills and subagent profiles.
    pub commands: Loaded,
    pub binding: Option<Binding>,
    /// The conversation's model.
    pub settings: ProviderSettings,
}

/// Opens a conversation in `cwd` under `config` (not changed: a binding applies to a copy),
/// on `settings` unless the options name another model.
pub fn open(
    config: &Config,
    settings: &ProviderSettings,
    cwd: &Path,
    options: &ConversationOptions,
    approver: Box<dyn Approver>,
) -> Result<Conversation, Error> {
    let mut config = config.clone();
    let settings = match &options.model {
        Some(reference) => {
            let settings = config.resolve_model(Some(reference))?;
            assemble::check_key(&settings)?;
            settings
        }
        None => settings.clone(),
    };
    let wanted = options
        .resume
        .as_ref()
        .map_or(SessionChoice::New, |r| SessionChoice::Reference(r.clone()));
    let (mut binding, choice) = super::binding::prepare(
        options.composition.as_deref(),
        &wanted,
        &mut config,
        &settings,
        cwd,
    )?
    .runnable()?;
    let policy = assemble::permission_policy(&config, cwd)?;
    let mut ignore = |_: Event| {};
    let planner = assemble::planner_settings(&config, &settings)?;
    let provider_handle = provider::build(settings.clone())?;
    let mut tools = assemble::registry(&config, &mut ignore);
    let mut notices = Vec::new();
    let mcp_options = McpOptions {
        trust_project: options.trust_project_mcp,
        ..McpOptions::default()
    };
    let handle =
        super::binding::start_mcp(binding.as_ref(), &config, cwd, mcp_options, &mut |notice| {
            notices.push(notice)
        });
    handle.register(&mut tools);
    if let Some(binding) = binding.as_mut() {
        super::binding::pin_mcp(binding, options.resume.is_none(), &tools)?;
    }
    let registered = tools.names();
    let mcp = Arc::new(mcp::Host::new(handle));
    let gate = Arc::new(
        PolicyGate::new(policy, options.posture, Some(approver))
            .with_mcp(mcp.handle().tool_policies())
            .with_reviewer(assemble::reviewer(&config, &settings)?),
    );
    let flags = PromptFlags {
        binding: binding.clone(),
        id: None,
        ..PromptFlags::default()
    };
    let session = assemble::open_session(
        &choice,
        Attach::InPlace,
        &flags,
        &config,
        &settings,
        cwd,
        "serve",
    )?;
    let built = build::agent(
        Parts {
            config: &config,
            settings: &settings,
            cwd,
            planner: planner.as_ref(),
            provider: provider_handle,
            tools,
            binding: binding.as_ref(),
            mcp: Some(Box::new(mcp.handle().tool_watch())),
            gate: Arc::clone(&gate),
            session,
            max_steps: None,
            effort: options.effort.clone(),
            budget: Budget::default(),
            read_only: false,
            only_tools: None,
        },
        &mut ignore,
    )?;
    let mut commands = custom::load_for(&config, cwd);
    if let Some(binding) = &binding {
        commands
            .commands
            .retain(|c| binding.modules.commands.keeps(&c.name));
    }
    // The skills and subagent profiles as `/NAME`, as in the chat: the browser's composer
    // shares its input path, `/<profile> TASK` included.
    super::skills::add_commands(&mut commands, &super::skills::session_store(&config, cwd));
    Ok(Conversation {
        runner: built.runner,
        gate,
        mcp,
        registered,
        notices,
        commands,
        binding,
        settings,
    })
}
