//! The CLI's [`Delegate`]: starts a child agent for `task`, `read_only_task` and subagent
//! skills. The child talks to the same provider (or the model the profile or call names),
//! is judged by the parent's gate, works in the parent's sandbox under the parent's cancel
//! token, inherits plan mode, and writes an isolated session under the parent's session
//! directory (`<sessions>/<parent-id>/children/<child-id>.jsonl`). Its usage is added to a
//! tally the front end folds into the parent's totals.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Instant;

use super::assemble::{self, PromptFlags};
use crate::agent::events::{ChildState, Event, EventSink};
use crate::agent::fallback::Fallback;
use crate::agent::hooks::{HookEvent, Hooks};
use crate::agent::live::EventQueue;
use crate::agent::runner::{Agent, AgentError, Budget, Finish, Options};
use crate::agent::scheduler::{Claim, Limits, Scheduler};
use crate::agent::session::{self, Header, Session};
use crate::config::Config;
use crate::permission::{ChecksOnly, PolicyGate};
use crate::provider::{self, Message, ProviderSettings, Usage};
use crate::sandbox::Policy;
use crate::skill::{RunAs, Skill};
use crate::tool::collab::Workflow;
use crate::tool::delegate::{Delegate, TaskOutcome, TaskSpec};
use crate::tool::{Registry, Tool, ToolContext};

/// What the children of one run have used, for the parent's result.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    pub usage: Usage,
    pub cost_usd: f64,
    pub requests: u32,
}

/// Starts children for one parent session.
pub struct Children {
    pub config: Config,
    /// The executor's provider settings: the default model of every child.
    pub settings: ProviderSettings,
    /// The executor's reasoning effort, the last step of the precedence.
    pub effort: Option<String>,
    pub gate: Arc<PolicyGate>,
    /// `<sessions>/<parent-id>` of the session at start: children go in its `children`
    /// directory, unless the context names the parent's current session.
    pub parent_dir: PathBuf,
    pub tally: Arc<Mutex<Tally>>,
    /// The session's caps on children running at once, writers, and overlapping writers.
    scheduler: Scheduler,
    /// The parent agent's event queue: each child's status and (while the call that started
    /// it runs) its events, and an `Event::Subagent` when it finishes.
    events: OnceLock<Arc<EventQueue>>,
    /// The parent's hooks; a child runs those around tool calls, and `SubagentStop`.
    hooks: OnceLock<Hooks>,
    /// The MCP tools the parent offered when it last started children
    /// ([`Delegate::offer_mcp`]): a child's MCP tools are chosen from these.
    mcp: Mutex<Vec<Arc<dyn Tool>>>,
    /// The run's budget (`run --max-tokens-total`, `--max-budget-usd`), which children spend
    /// from too; unlimited by default.
    pub budget: Budget,
    /// The run's `--fallback-model`: a child's turn goes on with it as the parent's does.
    fallback: OnceLock<Fallback>,
}

impl Children {
    pub fn new(
        config: &Config,
        settings: &ProviderSettings,
        effort: Option<String>,
        gate: Arc<PolicyGate>,
        parent: &Session,
    ) -> Children {
        let sessions = parent
            .path()
            .parent()
            .map(PathBuf::from)
            .unwrap_or_default();
        Children {
            config: config.clone(),
            settings: settings.clone(),
            effort,
            gate,
            parent_dir: sessions.join(parent.id()),
            tally: Arc::default(),
            scheduler: Scheduler::new(Limits {
                running: config.agent.max_subagent_concurrency as usize,
                writers: config.agent.max_parallel_writers as usize,
                per_round: config.agent.max_subagents_per_round as usize,
                per_run: config.agent.max_subagents_per_run as usize,
            }),
            events: OnceLock::new(),
            hooks: OnceLock::new(),
            mcp: Mutex::default(),
            budget: Budget::default(),
            fallback: OnceLock::new(),
        }
    }

    /// `--fallback-model`: children whose own model is overloaded go on with it too (except
    /// a child that runs on the fallback model itself).
    pub fn set_fallback(&self, fallback: Fallback) {
        let _ = self.fallback.set(fallback);
    }

    /// The hooks children run: the parent's `PreToolUse` and `PostToolUse` (a hook that
    /// guards the parent's calls guards the child's too), and `SubagentStop` where a child
    /// ends. `PermissionRequest` and `Notification` already run from the shared gate; the
    /// session and prompt events belong to the parent.
    pub fn set_hooks(&self, parent: &Hooks) {
        let kept = parent
            .list()
            .iter()
            .filter(|h| {
                matches!(
                    h.event,
                    HookEvent::PreToolUse | HookEvent::PostToolUse | HookEvent::SubagentStop
                )
            })
            .cloned()
            .collect();
        let _ = self.hooks.set(Hooks::new(kept));
    }

    /// Reports each finished child into the parent's event stream (see `Agent::event_queue`).
    pub fn report_to(&self, queue: Arc<EventQueue>) {
        let _ = self.events.set(queue);
    }

    /// The profile a call names: a `runAs: subagent` skill of the session, then a built-in.
    fn profile(&self, name: &str, parent: &ToolContext) -> Result<Skill, String> {
        let stored = parent.skills.as_ref().and_then(|s| s.get(name));
        match stored {
            Some(skill) if skill.run_as == RunAs::Subagent => Ok(skill.clone()),
            Some(_) => Err(format!(
                "`{name}` is an inline skill, not a subagent profile; load it with the skill tool"
            )),
            None => crate::skill::builtin::profile(name)
                .ok_or_else(|| format!("there is no subagent profile `{name}`")),
        }
    }

    /// The child's registry: the enabled built-ins (never the task tools, so children do
    /// not nest), or only those that read, with a shell jailed so that it cannot write; and
    /// the parent's MCP tools that `profile` selects (see [`mcp_selected`]), the same tools
    /// of the same servers, judged by the same gate.
    fn registry(&self, read_only: bool, profile: Option<&Skill>, parent: &ToolContext) -> Registry {
        let mut discard = |_: Event| {};
        let mut tools = assemble::registry(&self.config, &mut discard);
        if parent.skills.is_some() {
            tools.insert(Arc::new(crate::tool::builtin::skill::SkillTool));
        }
        let offered = self.mcp.lock().unwrap_or_else(PoisonError::into_inner);
        for tool in offered.iter().filter(|t| mcp_selected(t.name(), profile)) {
            tools.insert(Arc::clone(tool));
        }
        if read_only {
            keep_readers_and_shell(&mut tools);
        }
        tools
    }

    /// What a task will run as: its profile, whether it is read-only, and the sandbox it
    /// works in (a writer given `write_paths` is fenced to them, a reader to nothing).
    fn plan(&self, task: &TaskSpec, parent: &ToolContext) -> Result<Planned, String> {
        let profile = match &task.profile {
            Some(name) => Some(self.profile(name, parent)?),
            None => None,
        };
        // A repository's profile in an untrusted workspace would be a system prompt written
        // by whoever wrote the repository: it gets the readers only.
        let read_only = task.read_only
            || profile
                .as_ref()
                .is_some_and(|p| crate::skill::builtin::is_read_only(p) || !p.trusted);
        let fence: Option<Vec<PathBuf>> = match (&task.write_paths, read_only) {
            (_, true) => Some(Vec::new()),
            (None, false) => None,
            (Some(paths), false) if paths.is_empty() => {
                return Err(
                    "`write_paths` is empty: leave it out to let the subagent write \
                            where you may, or make the task read-only"
                        .into(),
                )
            }
            (Some(paths), false) => Some(paths.iter().map(PathBuf::from).collect()),
        };
        let sandbox = match &fence {
            Some(paths) => Arc::new(
                parent
                    .sandbox
                    .fenced(paths)
                    .map_err(|e| format!("`write_paths`: {e}"))?,
            ),
            None => Arc::clone(&parent.sandbox),
        };
        let claim = if read_only {
            Claim::Reader
        } else {
            Claim::Writer(sandbox.fence.clone())
        };
        Ok(Planned {
            profile,
            read_only,
            sandbox,
            claim,
        })
    }

    /// The child agent of a planned task.
    fn start(
        &self,
        task: &TaskSpec,
        planned: &Planned,
        parent: &ToolContext,
    ) -> Result<Agent, String> {
        let profile = planned.profile.as_ref();
        let (model, effort) = choose(&self.config, profile, task);
        let mut settings = match &model {
            Some(reference) => self
                .config
                .resolve_model(Some(reference))
                .map_err(|e| format!("the subagent's model: {e}"))?,
            None => self.settings.clone(),
        };
        let fallback = self
            .fallback
            .get()
            .filter(|f| f.provider.name() != settings.name || f.provider.model() != settings.model)
            .cloned();
        if fallback.is_some() {
            crate::agent::fallback::hand_over_early(&mut settings.retry);
        }
        let effort = effort.or_else(|| self.effort.clone());
        let provider = provider::build(settings.clone()).map_err(|e| e.to_string())?;
        let system = match profile {
            Some(p) => p.body.trim().to_string(),
            None => assemble::system_prompt(&PromptFlags::default(), &self.config, &parent.cwd)
                .map_err(|e| e.to_string())?,
        };
        let header = Header::new(
            session::new_id(),
            &settings.name,
            &settings.model,
            &parent.cwd,
        );
        // The parent's current session (the chat's `/new` changes it), else the one at start.
        let parent_dir = parent
            .session_path
            .as_deref()
            .and_then(|p| Some(p.parent()?.join(p.file_stem()?)))
            .unwrap_or_else(|| self.parent_dir.clone());
        let mut child_session = Session::create(&parent_dir.join("children"), header)
            .map_err(|e| format!("cannot store the subagent's session: {e}"))?;
        child_session
            .push(Message::system(system))
            .map_err(|e| e.to_string())?;
        let planning = parent
            .workflow
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .planning;
        let mut ctx = parent.clone();
        ctx.delegate = None;
        ctx.interact = None;
        ctx.call_id = None;
        ctx.sandbox = Arc::clone(&planned.sandbox);
        ctx.todos = Arc::default();
        ctx.workflow = Arc::new(Mutex::new(Workflow {
            planning,
            ..Workflow::default()
        }));
        let options = Options {
            budget: self.budget.clone(),
            fallback,
            ..assemble::options(&self.config, &settings, None, effort)
        };
        let tools = self.registry(planned.read_only, planned.profile.as_ref(), parent);
        let gate = Box::new(ChecksOnly(Arc::clone(&self.gate)));
        let mut agent = Agent::new(provider, tools, gate, child_session, ctx, options);
        if let Some(hooks) = self.hooks.get() {
            agent.set_stop_event(HookEvent::SubagentStop);
            agent.set_hooks(hooks.clone());
        }
        Ok(agent)
    }

    fn report(&self, event: Event) {
        if let Some(queue) = self.events.get() {
            queue.push(event);
        }
    }
}

/// A task resolved before it waits for its place.
struct Planned {
    profile: Option<Skill>,
    read_only: bool,
    sandbox: Arc<Policy>,
    claim: Claim,
}

impl Delegate for Children {
    fn begin_round(&self) {
        self.scheduler.begin_round();
    }

    fn offer_mcp(&self, tools: Vec<Arc<dyn Tool>>) {
        *self.mcp.lock().unwrap_or_else(PoisonError::into_inner) = tools;
    }

    fn run(&self, task: &TaskSpec, parent: &ToolContext) -> Result<TaskOutcome, String> {
        let planned = self.plan(task, parent)?;
        self.scheduler.admit()?;
        let caller = parent.call_id.clone();
        let status = |state| Event::SubagentStatus {
            parent_tool_use_id: caller.clone(),
            task: task.index,
            profile: task.profile.clone(),
            label: crate::text::one_line(task.prompt.lines().next().unwrap_or(""), 80),
            state,
        };
        let slot = self
            .scheduler
            .acquire(&planned.claim, &parent.cancel, || {
                self.report(status(ChildState::Queued))
            })
            .ok_or("the subagent was cancelled before it started")?;
        let started = Instant::now();
        let mut agent = self.start(task, &planned, parent)?;
        self.report(status(ChildState::Running));
        let finished = match (&caller, self.events.get()) {
            (Some(id), Some(queue)) => {
                let mut relay = |event: Event| {
                    queue.push(Event::Child {
                        parent_tool_use_id: id.clone(),
                        task: task.index,
                        event: Box::new(event),
                    })
                };
                agent.run(task.prompt.clone(), &mut relay)
            }
            _ => {
                let mut discard = |_: Event| {};
                let sink: &mut dyn EventSink = &mut discard;
                agent.run(task.prompt.clone(), sink)
            }
        };
        drop(slot);
        let stats = agent.stats();
        // The Guardian's reviews of the child's calls are the child's spending too.
        let mut usage = stats.usage;
        usage.add(&stats.reviews.usage);
        let cost_usd = stats.cost_usd + stats.reviews.cost_usd;
        {
            let mut tally = self.tally.lock().unwrap_or_else(PoisonError::into_inner);
            tally.usage.add(&usage);
            tally.cost_usd += cost_usd;
            tally.requests += stats.requests;
        }
        let (answer, ok) = match finished {
            Ok(Finish::Answered) => (stats.final_text.clone(), true),
            Ok(Finish::Plan(plan)) => (plan, true),
            Ok(Finish::StepLimit) => (
                format!(
                    "it reached its step limit. Last words: {}",
                    stats.final_text
                ),
                false,
            ),
            Ok(Finish::Budget(spent)) => (
                format!("it stopped: {spent}. Last words: {}", stats.final_text),
                false,
            ),
            Ok(Finish::NoProgress) => (
                format!(
                    "it stopped making progress. Last words: {}",
                    stats.final_text
                ),
                false,
            ),
            Err(AgentError::Interrupted) => ("it was interrupted".into(), false),
            Err(err) => (err.to_string(), false),
        };
        let session_path = agent.session().path().display().to_string();
        self.report(Event::Subagent {
            parent_tool_use_id: caller,
            task: task.index,
            session_path: session_path.clone(),
            profile: task.profile.clone(),
            read_only: planned.read_only,
            ok,
            requests: stats.requests,
            tool_rounds: stats.tool_rounds,
            usage,
            cost_usd: agent.options().prices.map(|_| cost_usd),
            elapsed_ms: started.elapsed().as_millis() as u64,
        });
        Ok(TaskOutcome {
            answer,
            ok,
            session_path,
            usage,
            requests: stats.requests,
            tool_rounds: stats.tool_rounds,
        })
    }
}

/// The child's model and effort by §3.10's precedence: `agent.subagent_models[profile]` /
/// `subagent_efforts[profile]`, then the call's, then the profile's frontmatter, then
/// `agent.subagent_model` / `subagent_effort`; `None` leaves the executor's.
pub fn choose(
    config: &Config,
    profile: Option<&Skill>,
    call: &TaskSpec,
) -> (Option<String>, Option<String>) {
    let agent = &config.agent;
    let name = profile.map(|p| p.name.as_str());
    let per = |map: &std::collections::BTreeMap<String, String>| {
        name.and_then(|n| map.get(n))
            .filter(|v| !v.is_empty())
            .cloned()
    };
    let model = per(&agent.subagent_models)
        .or_else(|| call.model.clone())
        .or_else(|| profile.and_then(|p| p.model.clone()))
        .or_else(|| agent.subagent_model.clone());
    let effort = per(&agent.subagent_efforts)
        .or_else(|| call.effort.clone())
        .or_else(|| profile.and_then(|p| p.effort.clone()))
        .or_else(|| agent.subagent_effort.clone());
    (model, effort)
}

/// Whether a child of `profile` gets the parent's MCP tool `name`: every one, unless the
/// profile's `allowed-tools` names MCP tools (`mcp__server__tool`, or `mcp__server__*` for a
/// server's all); then only those.
fn mcp_selected(name: &str, profile: Option<&Skill>) -> bool {
    let named: Vec<&str> = profile
        .map(|p| p.allowed_tools.iter().map(String::as_str))
        .into_iter()
        .flatten()
        .filter(|entry| entry.starts_with("mcp__"))
        .collect();
    named.is_empty()
        || named.iter().any(|entry| match entry.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == *entry,
        })
}

/// The read-only registry: only tools that declare they change nothing (readers, the task
/// list, history, `ask`). `bash` is left out: a shell is not read-only, whatever it runs.
pub fn keep_readers(tools: &mut Registry) {
    let keep: Vec<String> = tools
        .names()
        .into_iter()
        .filter(|n| tools.get(n).is_some_and(|t| t.read_only()))
        .collect();
    tools.retain(|n| keep.iter().any(|k| k == n));
}

/// The read-only registry of a subagent: the readers, and in place of `bash` (when it was
/// enabled) the shell that only runs in a jail with nothing writable. The caller fences the
/// context's sandbox to no path (`Policy::fenced(&[])`), which that shell requires.
pub fn keep_readers_and_shell(tools: &mut Registry) {
    let shell = tools.get("bash").is_some();
    keep_readers(tools);
    if shell {
        tools.insert(Arc::new(crate::tool::builtin::read_only_bash::ReadOnlyBash));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skill::{Invocation, Scope};

    fn profile(allowed_tools: &[&str]) -> Skill {
        Skill {
            name: "helper".into(),
            description: String::new(),
            run_as: RunAs::Subagent,
            invocation: Invocation::Manual,
            model: None,
            effort: None,
            allowed_tools: allowed_tools.iter().map(|t| t.to_string()).collect(),
            body: String::new(),
            dir: Default::default(),
            scope: Scope::User,
            trusted: true,
            references: Vec::new(),
            has_scripts: false,
        }
    }

    #[test]
    fn a_profile_naming_mcp_tools_gets_only_those_and_others_get_every_one() {
        assert!(mcp_selected("mcp__docs__search", None));
        let plain = profile(&["Read", "Bash(git diff:*)"]);
        assert!(mcp_selected("mcp__docs__search", Some(&plain)));
        let picky = profile(&["Read", "mcp__docs__search", "mcp__db__*"]);
        assert!(mcp_selected("mcp__docs__search", Some(&picky)));
        assert!(!mcp_selected("mcp__docs__delete", Some(&picky)));
        assert!(mcp_selected("mcp__db__query", Some(&picky)));
        assert!(!mcp_selected("mcp__dbx__query", Some(&picky)));
    }
}
