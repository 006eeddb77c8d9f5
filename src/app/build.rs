//! The agent of a session from its assembled parts: the tool context, the skill and task
//! tools, subagents (or, for a read-only run, the readers and a jailed shell), the
//! composition's restriction, the MCP tool source, hooks and the planner pair. Every front
//! end ends its assembly here, so none can leave a step out. What each front end does first
//! (its gate, when its MCP servers start, which session it opens) stays its own.

use std::path::Path;
use std::sync::{Arc, Mutex};

use super::assemble;
use super::delegate::{self, Children, Tally};
use super::Error;
use crate::agent::driver::Runner;
use crate::agent::events::{Event, EventSink, NoticeLevel};
use crate::agent::runner::{Agent, Budget};
use crate::agent::session::Session;
use crate::composition::resolve::Binding;
use crate::config::Config;
use crate::permission::PolicyGate;
use crate::provider::{Provider, ProviderSettings};
use crate::tool::source::ToolSource;
use crate::tool::{Registry, ToolContext};

/// What a front end has assembled before the agent is made.
pub struct Parts<'a> {
    pub config: &'a Config,
    /// The executor's model.
    pub settings: &'a ProviderSettings,
    pub cwd: &'a Path,
    /// `agent.planner_model` ([`assemble::planner_settings`]); `None`: one agent.
    pub planner: Option<&'a ProviderSettings>,
    /// The executor's provider, built from `settings`.
    pub provider: Box<dyn Provider>,
    /// The enabled built-ins and the MCP tools already registered.
    pub tools: Registry,
    /// The composition the conversation is bound to (already applied to `config`).
    pub binding: Option<&'a Binding>,
    /// The running MCP servers' tool watch; `None` while the chat starts them later.
    pub mcp: Option<Box<dyn ToolSource>>,
    pub gate: Arc<PolicyGate>,
    pub session: Session,
    /// The tool rounds a turn may take; `None`: no limit.
    pub max_steps: Option<u32>,
    /// The reasoning effort the flags ask for (the config's otherwise).
    pub effort: Option<String>,
    /// The run's budget, which its subagents spend from too; unlimited by default.
    pub budget: Budget,
    /// A read-only run (`reasonix subagent try`, an untrusted profile): the readers and a
    /// shell jailed with nothing writable, no subagents of its own.
    pub read_only: bool,
    /// Only these built-in tools (our names) are offered (Claude's `--tools`); MCP tools are
    /// not affected. `None`: every enabled tool.
    pub only_tools: Option<&'a [String]>,
}

/// The session's agent and what the front end keeps of it.
pub struct Built {
    pub runner: Runner,
    /// The context the agent's tools run in (its cancel token, sandbox, skills).
    pub ctx: ToolContext,
    /// What the subagents used, for the run's totals.
    pub tally: Arc<Mutex<Tally>>,
    /// The tools the model is offered at the start, as `init` lists them.
    pub tool_names: Vec<String>,
    /// The subagents' launcher (a front end that adds hooks later gives them to it too).
    pub children: Arc<Children>,
    /// The session's gate (a front end may change its posture while the session runs).
    pub gate: Arc<PolicyGate>,
}

/// Makes the agent from `parts`; the session's repair notice and the hooks' problems are
/// warnings on `sink`.
pub fn agent(parts: Parts, sink: &mut dyn EventSink) -> Result<Built, Error> {
    let Parts {
        config,
        settings,
        cwd,
        planner,
        provider,
        mut tools,
        binding,
        mcp,
        gate,
        session,
        max_steps,
        effort,
        budget,
        read_only,
        only_tools,
    } = parts;
    let notices = session
        .repair_notice()
        .into_iter()
        .chain(super::skills::untrusted_agents_notice(config, cwd));
    for message in notices {
        sink.emit(Event::Notice {
            level: NoticeLevel::Warning,
            message,
        });
    }
    let mut ctx = assemble::tool_context(config, cwd)?;
    assemble::add_skill_tool(&mut tools, &ctx);
    let mut options = assemble::options(config, settings, max_steps, effort);
    options.budget = budget;
    // Children are stored under the agent's current session (`ToolContext::session_path`).
    let mut children = Children::new(
        config,
        settings,
        options.reasoning_effort.clone(),
        Arc::clone(&gate),
        &session,
    );
    children.budget = options.budget.clone();
    let children = Arc::new(children);
    let tally = Arc::clone(&children.tally);
    if read_only {
        delegate::keep_readers_and_shell(&mut tools);
        let shut = ctx
            .sandbox
            .fenced(&[])
            .map_err(|e| Error::Failed(e.to_string()))?;
        ctx.sandbox = Arc::new(shut);
    } else {
        assemble::add_task_tools(&mut tools, &mut ctx, config, children.clone());
    }
    if let Some(keep) = only_tools {
        tools.retain(|name| name.starts_with("mcp__") || keep.iter().any(|k| k == name));
    }
    if let Some(binding) = binding {
        crate::composition::resolve::restrict(binding, &mut tools)?;
    }
    let source = mcp.map(|watch| super::binding::tool_source(binding, watch, &mut tools));
    let mut tool_names = tools.names();
    if planner.is_some() {
        // The coordinator gives the executor its report tool.
        tool_names.push(crate::agent::coordinator::PLAN_STATUS_TOOL.into());
    }
    let mut agent = Agent::new(
        provider,
        tools,
        Box::new(Arc::clone(&gate)),
        session,
        ctx.clone(),
        options,
    );
    if let Some(source) = source {
        agent.set_tool_source(source);
    }
    children.report_to(agent.event_queue());
    super::hooks::install(&mut agent, &children, config, cwd, sink);
    let cancel = ctx.cancel.clone();
    let runner = assemble::runner(agent, planner, config, cwd, &gate, cancel)?;
    Ok(Built {
        runner,
        ctx,
        tally,
        tool_names,
        children,
        gate,
    })
}
