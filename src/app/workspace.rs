//! A conversation's workspace for a front end that keeps it open (the chat): the config layers
//! with the project file believed or not, the model, the composition binding (or a resumed
//! conversation's, or history only), and the commands it offers (custom commands the binding
//! keeps, skills and subagent profiles); then its agent, with or without the MCP servers
//! already started. The front end asks the trust question, shows the warnings and checks the
//! key when it knows which provider it is.

use std::path::PathBuf;
use std::sync::Arc;

use super::assemble::{self, Attach, ProjectFlags, PromptFlags, SessionChoice};
use super::build::{self, Built, Parts};
use super::Error;
use crate::agent::events::EventSink;
use crate::agent::runner::Budget;
use crate::command::custom::{self, Loaded};
use crate::composition::resolve::Binding;
use crate::composition::CompositionError;
use crate::config::Config;
use crate::mcp::McpHandle;
use crate::permission::PolicyGate;
use crate::provider::{self, ProviderSettings};
use crate::tool::source::ToolSource;

/// What the front end's flags say about the workspace.
#[derive(Debug, Clone, Default)]
pub struct WorkspaceOptions {
    /// `--config FILE`, above the project's.
    pub config_file: Option<PathBuf>,
    /// `--trust-project`, or the trust question answered yes.
    pub trust_project: bool,
    /// `--model REF`.
    pub model: Option<String>,
    /// `--agent-composition ID` for a new conversation.
    pub composition: Option<String>,
    /// A new conversation, the newest or one by reference.
    pub session: SessionChoice,
}

/// Everything a chat needs, assembled from config and options.
pub struct Workspace {
    pub config: Config,
    pub settings: ProviderSettings,
    pub cwd: PathBuf,
    pub commands: Loaded,
    /// The project file was believed (trusted workspace or `--trust-project`).
    pub trusted: bool,
    /// Project keys ignored because the workspace is not trusted.
    pub untrusted: Vec<String>,
    /// The config's warnings, for the front end to show.
    pub warnings: Vec<String>,
    /// The agent composition the conversation is bound to (already applied to `config`).
    pub binding: Option<Binding>,
    /// The session to open: a new one, or the file the binding checks read.
    pub session: SessionChoice,
    /// The resumed conversation's binding cannot run here: it opens as history only.
    pub history_only: Option<CompositionError>,
}

/// Loads config and commands for a conversation in `cwd`; the config's warnings are in the
/// result. The key is the caller's to check, once the workspace's trust is decided.
pub fn prepare(options: &WorkspaceOptions, cwd: PathBuf) -> Result<Workspace, Error> {
    let project = ProjectFlags {
        trust: options.trust_project,
        strict: false,
        claude_setting_sources: None,
    };
    let loaded = assemble::load_config(options.config_file.as_deref(), &cwd, project)?;
    let mut config = loaded.config;
    let settings = config.resolve_model(options.model.as_deref())?;
    let prepared = super::binding::prepare(
        options.composition.as_deref(),
        &options.session,
        &mut config,
        &settings,
        &cwd,
    )?;
    let binding = prepared.binding;
    let mut commands = custom::load_for(&config, &cwd);
    if let Some(binding) = &binding {
        commands
            .commands
            .retain(|c| binding.modules.commands.keeps(&c.name));
    }
    super::skills::add_commands(&mut commands, &super::skills::session_store(&config, &cwd));
    Ok(Workspace {
        config,
        settings,
        cwd,
        commands,
        trusted: loaded.trusted,
        untrusted: loaded.untrusted,
        warnings: loaded.warnings,
        binding,
        session: prepared.session,
        history_only: prepared.history_only,
    })
}

impl Workspace {
    /// The conversation's agent with the built-in tools and, when already started, the MCP
    /// servers' tools (pinned to a binding); with `agent.planner_model`, paired with its
    /// planner. The session is opened here (`attach`: in place or forked).
    pub fn agent(
        &self,
        attach: Attach,
        effort: Option<String>,
        gate: Arc<PolicyGate>,
        mcp: Option<&McpHandle>,
        sink: &mut dyn EventSink,
    ) -> Result<Built, Error> {
        let Workspace {
            config,
            settings,
            cwd,
            ..
        } = self;
        let planner = assemble::planner_settings(config, settings)?;
        let provider_handle = provider::build(settings.clone())?;
        let mut tools = assemble::registry(config, sink);
        let mut binding = self.binding.clone();
        if let Some(mcp) = mcp {
            mcp.register(&mut tools);
            if let Some(binding) = binding.as_mut() {
                let fresh = self.session == SessionChoice::New;
                super::binding::pin_mcp(binding, fresh, &tools)?;
            }
        }
        let session = assemble::open_session(
            &self.session,
            attach,
            &PromptFlags {
                binding: binding.clone(),
                id: None,
                ..PromptFlags::default()
            },
            config,
            settings,
            cwd,
            "chat",
        )?;
        let watch = mcp.map(|mcp| Box::new(mcp.tool_watch()) as Box<dyn ToolSource>);
        build::agent(
            Parts {
                config,
                settings,
                cwd,
                planner: planner.as_ref(),
                provider: provider_handle,
                tools,
                binding: binding.as_ref(),
                mcp: watch,
                gate,
                session,
                max_steps: None,
                effort,
                budget: Budget::default(),
                read_only: false,
                only_tools: None,
            },
            sink,
        )
    }
}
