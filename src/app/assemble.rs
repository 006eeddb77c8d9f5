//! Building a session's parts from configuration, shared by every front end: the working directory, the loaded config, the key check, the tool registry, the
//! session (new or resumed) with its system prompt, the tool context with the sandbox, the
//! permission policy and the agent options. Saving an "always allow" rule into
//! `./reasonix.toml` is `config::edit`'s job.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Error;
use crate::agent::compaction::ContextOptions;
use crate::agent::coordinator::{self, Coordinator, PlannerParts};
use crate::agent::driver::Runner;
use crate::agent::events::{Event, EventSink, NoticeLevel};
use crate::agent::plan::PlanSettings;
use crate::agent::prompt::{self, PromptInputs};
use crate::agent::round_caps::RoundCaps;
use crate::agent::runner::{Agent, Budget, Options};
use crate::agent::session::{self, Header, Session};
use crate::agent::waiting::{self, Watch};
use crate::cancel::CancelToken;
use crate::config::{self, Config, LoadOptions, Loaded, PermissionMode};
use crate::permission::{ChecksOnly, Decision, Policy, PolicyGate, Posture};
use crate::provider::{self, Message, ProviderError, ProviderSettings};
use crate::tool::{builtin, Registry, ToolContext};

/// The canonical working directory (after `-C`).
pub fn working_dir() -> Result<PathBuf, Error> {
    std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .map_err(|e| Error::io("reading the working directory", e))
}

/// What the command line says about the project file.
#[derive(Debug, Clone, Default)]
pub struct ProjectFlags {
    /// `--trust-project`: believe the project file for this run only.
    pub trust: bool,
    /// `--permission-mode strict`: the project file's allow rules and wider mode are ignored.
    pub strict: bool,
    /// Claude print mode's `--setting-sources`: which Claude Code settings files are read.
    pub claude_setting_sources: Option<Vec<String>>,
}

/// Loads the layered config, `config_file` (`--config`) above the project's. Its warnings
/// are for the caller to show, so a chat that loads twice (after the trust question) says
/// each once.
pub fn load_config(
    config_file: Option<&Path>,
    cwd: &Path,
    project: ProjectFlags,
) -> Result<Loaded, Error> {
    let mut options = LoadOptions::from_env(cwd.to_path_buf(), config_file.map(Path::to_path_buf))?;
    options.trust_project = project.trust;
    options.strict = project.strict;
    options.claude_setting_sources = project.claude_setting_sources;
    let loaded = config::load(&options)?;
    crate::i18n::set(crate::i18n::Lang::from_env(
        loaded.config.language.as_deref(),
    ));
    Ok(loaded)
}

/// A key is required unless the endpoint is a plain-http server (a local model) or a replay.
pub fn check_key(settings: &ProviderSettings) -> Result<(), Error> {
    let local = settings.base_url.starts_with("http://")
        || settings
            .chat_url
            .as_deref()
            .is_some_and(|u| u.starts_with("http://"));
    if settings.api_key.is_none() && settings.kind != "replay" && !local {
        return Err(Error::Provider(ProviderError::MissingKey {
            provider: settings.name.clone(),
            api_key_env: settings.api_key_env.clone(),
        }));
    }
    Ok(())
}

/// The enabled built-in tools; unknown names in `[tools] enabled` become warnings.
pub fn registry(config: &Config, sink: &mut dyn EventSink) -> Registry {
    let enabled = &config.tools.enabled;
    let mut registry = Registry::new();
    let all = builtin::all();
    for name in enabled {
        if !all.iter().any(|t| t.name() == name) {
            sink.emit(Event::Notice {
                level: NoticeLevel::Warning,
                message: format!("[tools] enabled names unknown tool `{name}` (ignored)"),
            });
        }
    }
    for tool in all {
        if enabled.is_empty() || enabled.iter().any(|n| n == tool.name()) {
            registry.insert(tool);
        }
    }
    registry
}

/// Which session to continue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum SessionChoice {
    #[default]
    New,
    /// `--continue`: the newest session of this workspace.
    Newest,
    /// `--resume ID|PATH`.
    Reference(String),
}

/// How an existing session is continued.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Attach {
    /// In place, holding its lock: a second process on the same session fails at once.
    #[default]
    InPlace,
    /// `--fork-session`: a copy under a new id, leaving the original to whoever has it.
    Fork,
}

impl Attach {
    /// The flag's check: forking needs a session to fork.
    pub fn check(self, choice: Option<&SessionChoice>) -> Result<(), Error> {
        match (self, choice) {
            (Attach::Fork, None | Some(SessionChoice::New)) => Err(Error::Usage(
                "--fork-session copies an existing session; add `--resume ID` or `--continue`"
                    .into(),
            )),
            _ => Ok(()),
        }
    }
}

/// Flags that shape the system prompt of a new session.
#[derive(Debug, Clone, Default)]
pub struct PromptFlags {
    pub system_prompt: Option<String>,
    pub append_system_prompt: Vec<String>,
    /// The agent composition a new session is bound to (header metadata only).
    pub binding: Option<crate::composition::resolve::Binding>,
    /// The id a new or forked session takes (print mode's `--session-id`); `None`: a fresh
    /// one from [`session::new_id`].
    pub id: Option<String>,
}

/// The session a run or chat works in: new, or an existing one continued in place (locked)
/// or forked. What loading repaired is in [`Session::repair_notice`] for the caller to show.
pub fn open_session(
    choice: &SessionChoice,
    attach: Attach,
    flags: &PromptFlags,
    config: &Config,
    settings: &ProviderSettings,
    cwd: &Path,
    command: &str,
) -> Result<Session, Error> {
    let dir = config::paths::sessions_dir(&config.home, cwd);
    let path = match choice {
        SessionChoice::New => return new_session(flags, config, settings, cwd),
        SessionChoice::Newest => session::latest(&dir).ok_or_else(|| {
            Error::Usage(format!(
                "no session to continue in {}; start one with `reasonix {command}`",
                cwd.display()
            ))
        })?,
        SessionChoice::Reference(reference) => find_session(reference, config, cwd)?,
    };
    if !super::session_archive::kept_in_home(&config.home, &path) {
        return adopt_foreign(&path, flags, config, cwd);
    }
    match attach {
        Attach::InPlace => Ok(Session::open(&path)?),
        Attach::Fork => {
            let mut header = Header::new(
                new_id(flags, config, cwd)?,
                &settings.name,
                &settings.model,
                cwd,
            );
            link_planner(&mut header, config, settings);
            Ok(Session::fork(&path, &dir, header)?)
        }
    }
}

/// A session file reasonix did not write under the home (`--resume ./x.jsonl`, one a
/// repository ships, one a link leads out to) has no authority, as an archive has none: it is
/// copied into a new session of this workspace under the system prompt built now, its `system`
/// messages quoted, and its binding marked imported so the copy is never taken for the user's
/// own. The file itself is left as it was.
fn adopt_foreign(
    path: &Path,
    flags: &PromptFlags,
    config: &Config,
    cwd: &Path,
) -> Result<Session, Error> {
    let (mut header, messages) = session::load(path)?;
    if let Some(binding) = header.composition.as_mut() {
        binding.imported = true;
    }
    let system = system_prompt(flags, config, cwd)?;
    let decoded = super::session_archive::Decoded {
        header,
        messages: super::session_archive::imported_history(system, messages),
        resources: Default::default(),
    };
    let dir = config::paths::sessions_dir(&config.home, cwd);
    let id = super::session_archive::save(decoded, &config.home, &dir, cwd)?;
    Ok(Session::open(&dir.join(format!("{id}.jsonl")))?)
}

/// Resolves `--resume ID|PATH|prefix` to a session file.
pub fn find_session(reference: &str, config: &Config, cwd: &Path) -> Result<PathBuf, Error> {
    let dir = config::paths::sessions_dir(&config.home, cwd);
    let projects = config::paths::state_dir(&config.home).join("projects");
    session::find(reference, &dir, &projects).map_err(|e| match e {
        session::SessionError::NotFound(_) | session::SessionError::Ambiguous { .. } => {
            Error::Usage(e.to_string())
        }
        other => Error::Session(other),
    })
}

/// A fresh session file with the system prompt as its first message.
pub fn new_session(
    flags: &PromptFlags,
    config: &Config,
    settings: &ProviderSettings,
    cwd: &Path,
) -> Result<Session, Error> {
    let dir = config::paths::sessions_dir(&config.home, cwd);
    let mut header = Header::new(
        new_id(flags, config, cwd)?,
        &settings.name,
        &settings.model,
        cwd,
    );
    link_planner(&mut header, config, settings);
    if let Some(binding) = &flags.binding {
        header.bind(binding.clone());
    }
    let mut session = Session::create(&dir, header)?;
    let system = system_prompt(flags, config, cwd)?;
    session.push(Message::system(system))?;
    Ok(session)
}

/// The id of a session about to be created: the one asked for, unless a session already has
/// it (here or in another workspace: `--resume ID` must find one session), else a fresh one.
fn new_id(flags: &PromptFlags, config: &Config, cwd: &Path) -> Result<String, Error> {
    let Some(id) = &flags.id else {
        return Ok(session::new_id());
    };
    if find_session(id, config, cwd).is_ok() {
        return Err(Error::Usage(format!(
            "--session-id {id}: a session with this id already exists; continue it with \
             --resume {id}, or give another id"
        )));
    }
    Ok(id.clone())
}

/// A new executor session of a planner/executor pair names its planner session in its header.
fn link_planner(header: &mut Header, config: &Config, settings: &ProviderSettings) {
    if matches!(planner_settings(config, settings), Ok(Some(_))) {
        header.planner = Some(coordinator::planner_id(&header.id));
    }
}

/// The planner's model when `agent.planner_model` names one other than the executor's;
/// `None` keeps the single agent.
pub fn planner_settings(
    config: &Config,
    executor: &ProviderSettings,
) -> Result<Option<ProviderSettings>, Error> {
    let reference = config.agent.planner_model.as_deref().map(str::trim);
    let Some(reference) = reference.filter(|r| !r.is_empty()) else {
        return Ok(None);
    };
    let settings = config.resolve_model(Some(reference))?;
    if settings.name == executor.name && settings.model == executor.model {
        return Ok(None);
    }
    check_key(&settings)?;
    Ok(Some(settings))
}

/// What `run` and `chat` drive: the agent itself, or, with a planner model, a coordinator
/// pairing it (as executor) with a read-only planner under the same gate and `cancel`.
pub fn runner(
    executor: Agent,
    planner: Option<&ProviderSettings>,
    config: &Config,
    cwd: &Path,
    gate: &Arc<PolicyGate>,
    cancel: CancelToken,
) -> Result<Runner, Error> {
    let Some(settings) = planner else {
        return Ok(executor.into());
    };
    let mut ctx = tool_context(config, cwd)?;
    ctx.cancel = cancel;
    let parts = PlannerParts {
        provider: provider::build(settings.clone())?,
        tools: coordinator::research_tools(executor.tools()),
        gate: Box::new(ChecksOnly(Arc::clone(gate))),
        ctx,
        options: Options {
            // One budget for both models of the run.
            budget: executor.options().budget.clone(),
            ..options(config, settings, None, None)
        },
    };
    Ok(Coordinator::new(executor, parts).into())
}

pub fn system_prompt(flags: &PromptFlags, config: &Config, cwd: &Path) -> Result<String, Error> {
    let agent = &config.agent;
    let base = match (
        &flags.system_prompt,
        &agent.system_prompt_file,
        &agent.system_prompt,
    ) {
        (Some(text), _, _) => Some(text.clone()),
        (None, Some(file), _) => Some(std::fs::read_to_string(file).map_err(|e| {
            Error::io(
                format!("reading agent.system_prompt_file {}", file.display()),
                e,
            )
        })?),
        (None, None, text) => text.clone(),
    };
    let mut append: Vec<String> = agent.append_system_prompt.iter().cloned().collect();
    append.extend(flags.append_system_prompt.iter().cloned());
    append.extend(prompt::reasoning_language_line(agent.reasoning_language).map(String::from));
    let skills = crate::app::skills::session_store(config, cwd);
    append.extend(crate::skill::index::render(&skills.skills));
    let sandbox = crate::sandbox::Policy::new(sandbox_settings(config, cwd)?);
    let writable: Vec<PathBuf> = sandbox.roots().cloned().collect();
    let memory = config::paths::state_dir(&config.home).join("memory");
    let claude_user = config::claude::user_path(config, cwd, "CLAUDE.md");
    let prompt = prompt::system_prompt(&PromptInputs {
        base,
        append,
        cwd,
        home: &config.home,
        environment: config.environment.enabled,
        extra_tools: &config.environment.tools,
        writable: &writable,
        memory: Some(&memory),
        claude_user_instructions: claude_user.as_deref(),
    });
    Ok(with_persona(prompt, config))
}

/// `[agent] persona_prefix` / `persona_suffix` around the first-party prompt: they
/// supplement it, never replace it.
fn with_persona(prompt: String, config: &Config) -> String {
    fn part(p: &Option<String>) -> Option<&str> {
        p.as_deref().map(str::trim).filter(|t| !t.is_empty())
    }
    match (
        part(&config.agent.persona_prefix),
        part(&config.agent.persona_suffix),
    ) {
        (None, None) => prompt,
        (prefix, suffix) => {
            let mut text = String::new();
            if let Some(prefix) = prefix {
                text.push_str(prefix);
                text.push_str("\n\n");
            }
            text.push_str(&prompt);
            if let Some(suffix) = suffix {
                text.push_str("\n\n");
                text.push_str(suffix);
            }
            text
        }
    }
}

/// The tool context from `[tools]` (bash timeout) and the secret variable names, without a
/// sandbox from config (writers confined to the working directory).
pub fn tool_context(config: &Config, cwd: &Path) -> Result<ToolContext, Error> {
    let mut ctx = ToolContext::new(cwd.to_path_buf());
    ctx.bash_timeout = match config.tools.bash_timeout_seconds {
        0 => None,
        secs => Some(std::time::Duration::from_secs(secs)),
    };
    ctx.shell =
        builtin::bash::chosen_shell(&config.tools.shell, std::env::var_os("PATH").as_deref())
            .map_err(|e| Error::Config(config::ConfigError::Invalid(e)))?;
    ctx.secret_env = Arc::new(config.secret_env_names());
    ctx.sandbox = Arc::new(crate::sandbox::Policy::new(sandbox_settings(config, cwd)?));
    ctx.state = Some(Arc::new(builtin::history::StatePaths::new(
        &config::paths::state_dir(&config.home),
        config::paths::sessions_dir(&config.home, cwd),
    )));
    let skills = crate::app::skills::session_store(config, cwd);
    ctx.skills = (!skills.skills.is_empty()).then_some(skills);
    Ok(ctx)
}

/// The `skill` tool joins the tools when the session has skills, so a workspace without any
/// sends the same tool list as before.
pub fn add_skill_tool(tools: &mut Registry, ctx: &ToolContext) {
    if ctx.skills.is_some() {
        tools.insert(Arc::new(builtin::skill::SkillTool));
    }
}

/// `task`, `read_only_task`, `fleet`, `parallel_tasks` and (with skills) `read_only_skill`
/// join the tools with a delegate to run them (unless `[tools]
/// enabled` lists tools and leaves them out); a child gets no delegate, so children do not
/// nest.
pub fn add_task_tools(
    tools: &mut Registry,
    ctx: &mut ToolContext,
    config: &Config,
    children: Arc<dyn crate::tool::delegate::Delegate>,
) {
    let enabled = &config.tools.enabled;
    let wanted = |name: &str| enabled.is_empty() || enabled.iter().any(|n| n == name);
    if wanted("task") {
        tools.insert(Arc::new(builtin::task::Task));
    }
    if wanted("read_only_task") {
        tools.insert(Arc::new(builtin::task::ReadOnlyTask));
    }
    if wanted("fleet") {
        tools.insert(Arc::new(builtin::fleet::Fleet));
    }
    if wanted("parallel_tasks") {
        tools.insert(Arc::new(builtin::fleet::ParallelTasks));
    }
    if ctx.skills.is_some() && wanted("read_only_skill") {
        tools.insert(Arc::new(builtin::skill::ReadOnlySkill));
    }
    ctx.delegate = Some(children);
}

/// The `[sandbox]` table as sandbox settings, `${VAR}` expanded in `forbid_read`.
pub fn sandbox_settings(config: &Config, cwd: &Path) -> Result<crate::sandbox::Settings, Error> {
    Ok(crate::sandbox::Settings::from_config(config, cwd)?)
}

/// The static permission policy from `[permissions]`.
pub fn permission_policy(config: &Config, cwd: &Path) -> Result<Policy, Error> {
    permission_policy_with(config, cwd, &PermissionFlags::default())
}

/// Permission settings given on the command line.
#[derive(Debug, Clone, Default)]
pub struct PermissionFlags {
    pub posture: Option<Posture>,
    /// `--allow` / `--allowedTools` rules, added to `[permissions] allow`.
    pub allow: Vec<String>,
    /// `--deny` / `--disallowedTools` rules, added to `[permissions] deny`.
    pub deny: Vec<String>,
}

/// The config's rules plus the command line's.
fn permission_policy_with(
    config: &Config,
    cwd: &Path,
    flags: &PermissionFlags,
) -> Result<Policy, Error> {
    let perms = &config.permissions;
    let mode = match perms.mode {
        PermissionMode::Ask => Decision::Ask,
        PermissionMode::Allow => Decision::Allow,
        PermissionMode::Deny => Decision::Deny,
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut policy = Policy::new(mode, cwd.to_path_buf(), home);
    let parse = |lists: &[&[String]], key: &str| {
        let all: Vec<&String> = lists.iter().flat_map(|l| l.iter()).collect();
        Policy::parse_rules(&all).map_err(|e| {
            Error::Usage(format!(
                "{e} (in [permissions] {key} or --{key}); fix the rule"
            ))
        })
    };
    policy.allow = parse(&[&perms.allow, &flags.allow], "allow")?;
    policy.ask = parse(&[&perms.ask], "ask")?;
    policy.deny = parse(&[&perms.deny, &flags.deny], "deny")?;
    Ok(policy)
}

/// The gate for a headless run or a chat: rules from config and flags, the posture from
/// the flags (default ask), and the approver when the front end can ask.
pub fn gate(
    config: &Config,
    cwd: &Path,
    flags: &PermissionFlags,
    approver: Option<Box<dyn crate::permission::Approver>>,
) -> Result<PolicyGate, Error> {
    Ok(PolicyGate::new(
        permission_policy_with(config, cwd, flags)?,
        flags.posture.unwrap_or(Posture::Ask),
        approver,
    ))
}

/// The Guardian reviewer when a server of `config` sets `approvals_reviewer = "auto_review"`:
/// `[agent] reviewer_model`, else the executor's model (`settings`).
pub fn reviewer(
    config: &Config,
    settings: &ProviderSettings,
) -> Result<Option<Arc<dyn crate::permission::Reviewer>>, Error> {
    let Some(reviewer) = crate::agent::reviewer::settings(config, settings)? else {
        return Ok(None);
    };
    let prices = reviewer.prices;
    let provider = crate::provider::build(reviewer)?;
    Ok(Some(Arc::new(crate::agent::reviewer::ModelReviewer::new(
        provider,
        prices,
        &config.agent,
    ))))
}

/// The agent options from config, the resolved model and flags.
pub fn options(
    config: &Config,
    settings: &ProviderSettings,
    max_steps: Option<u32>,
    effort: Option<String>,
) -> Options {
    Options {
        max_steps,
        max_parallel_tools: config.agent.max_parallel_tools as usize,
        temperature: config.agent.temperature,
        max_tokens: config.agent.max_tokens,
        reasoning_effort: effort.or(config.agent.reasoning_effort.clone()),
        prices: settings.prices,
        context: ContextOptions {
            window: settings.context_window,
            snip_ratio: config.agent.tool_result_snip_ratio,
            compact_ratio: config.agent.compact_ratio,
            force_ratio: config.agent.compact_force_ratio,
            archive_dir: Some(config::paths::state_dir(&config.home).join("archive")),
        },
        plan: PlanSettings {
            auto_plan: config.agent.auto_plan,
            trusted_tools: config.agent.plan_mode_allowed_tools.clone(),
        },
        budget: Budget::default(),
        watch: Watch {
            idle_limit: Some(settings.timeouts.idle_stream),
            ..Watch::default()
        }
        .with_override(std::env::var(waiting::NOTICE_ENV).ok().as_deref()),
        caps: RoundCaps {
            mcp_calls: config.agent.max_mcp_calls_per_round as usize,
            image_bytes_per_request: config.agent.max_image_bytes_per_request,
        },
        fallback: None,
    }
}
