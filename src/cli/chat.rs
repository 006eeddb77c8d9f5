//! `reasonix chat` (and `reasonix` alone on a terminal): assembles the agent with the
//! interactive approver and hands it to the terminal UI, which also starts the MCP servers
//! (a project server's launch grant is asked in the chat). When stdin or stdout is not a
//! terminal it falls back to a plain line mode: one turn per input line, text output, no
//! prompts (like `reasonix run`).

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use super::agent_cmd::SlashAgent;
use super::flags::{self, CommonFlags};
use super::lex::Lexer;
use super::output::{Format, Output};
use super::Global;
use crate::agent::driver::Runner;
use crate::agent::events::{Event, EventSink, NoticeLevel};
use crate::agent::runner::AgentError;
use crate::agent::session::{self, Session};
use crate::app::assemble::{self, PromptFlags, SessionChoice};
use crate::app::workspace::{self, Workspace as Setup, WorkspaceOptions};
use crate::cli::error::{exit, Error};
use crate::command::input::{self, Input, Turn};
use crate::command::{Builtin, Catalog, CommandError};
use crate::config::{self, trust::TrustStore, Config};
use crate::mcp::{self, LaunchApprover, McpHandle, McpHost, McpOptions, NoMcp};
use crate::permission::{McpLookup, PolicyGate, Posture};
use crate::provider::{self, ProviderSettings};
use crate::term::ansi::CursorShape;
use crate::term::editor::History;
use crate::term::ui::{self, ModelSwitch, Services, Started, TrustAnswer, UiApprover, UiInteract};
use crate::tool::Tool;

pub const HELP: &str = concat!(
    "\
Usage: reasonix chat [FLAGS]
       reasonix [FLAGS]                   (the same chat: `reasonix -c` continues)

Opens the interactive chat. Type a message and press Enter; Alt-Enter or Ctrl-J adds a
line. `/` lists commands, `@path` attaches a file or directory, `!cmd` runs a shell
command. Esc interrupts a turn; Ctrl-C twice or Ctrl-D on an empty prompt exits.
When stdin or stdout is not a terminal, each input line is one turn and the answers are
printed as plain text. Bare `reasonix` without a provider key shows how to set one up.

Flags:
  -m, --model REF              Model: provider name, model name or provider/model
  -c, --continue               Continue the newest conversation of this workspace
      --resume ID|PATH         Continue a conversation by id, unique id prefix or path
      --fork-session           With --continue/--resume: continue a copy under a new id
      --effort LEVEL           Reasoning effort sent to the model
      --permission-mode MODE   ask (default), auto or yolo; Shift-Tab cycles it
      --trust-project          Believe ./reasonix.toml for this chat as if the workspace were
                               trusted (`reasonix trust`); nothing is stored
      --trust-project-mcp      Launch MCP servers declared by project files without asking
      --agent-composition ID   Bind a new conversation to an agent composition (builtin:minimal,
                               user:NAME, project:NAME, or `default`: your saved default);
                               see `reasonix agent`
      --plan                   Start in plan mode: the model researches and proposes a plan
                               for you to approve before it changes anything

MCP servers from [[plugins]] and .mcp.json start with the chat; `/mcp` lists them, their
prompts are /mcp__SERVER__PROMPT commands and @SERVER:URI attaches a resource. A server
declared by the project asks for a launch grant first (in plain mode it needs a stored
grant or --trust-project-mcp).

Until you trust the workspace (`reasonix trust`), ./reasonix.toml may only tighten your
settings: what it would loosen is ignored, with a warning naming each key. On a terminal the
chat first asks whether to trust it (for this chat, or remembered for the workspace).

",
    limits_help!()
);

/// The chat has no flags of its own: it takes the ones it shares with `run`.
type ChatArgs = CommonFlags;

fn parse(global: Global, lexer: &mut Lexer) -> Result<ChatArgs, Error> {
    let mut args = CommonFlags {
        global,
        ..CommonFlags::default()
    };
    flags::parse("chat", &mut args, lexer, |_, _| Ok(false))?;
    if args.posture == Some(Posture::Strict) {
        return Err(Error::Usage(
            "--permission-mode strict is for `reasonix run`; the chat can ask, so use ask, auto or yolo".into(),
        ));
    }
    Ok(args)
}

pub fn main(global: Global, lexer: &mut Lexer) -> Result<i32, Error> {
    let mut args = parse(global, lexer)?;
    args.global.enter_dir()?;
    let mut setup = prepare(&args)?;
    super::print_warnings(&setup.warnings);
    let interactive = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    if !interactive {
        assemble::check_key(&setup.settings)?;
        return plain_chat(&args, setup);
    }
    if !setup.untrusted.is_empty() {
        let answer = ui::ask_trust(&setup.untrusted)
            .map_err(|e| Error::io("asking whether to trust the workspace", e))?;
        if answer == TrustAnswer::Always {
            if let Err(err) = TrustStore::new(&setup.config.home).trust(&setup.cwd) {
                eprintln!("reasonix: warning: {err}; trusting for this chat only");
            }
        }
        if answer != TrustAnswer::No {
            args.trust_project = true;
            let shown = std::mem::take(&mut setup.warnings);
            setup = prepare(&args)?;
            super::print_warnings(setup.warnings.iter().filter(|w| !shown.contains(w)));
        }
    }
    // After the trust question: the provider that has the key may be the project's.
    assemble::check_key(&setup.settings)?;
    interactive_chat(&args, setup)
}

/// The chat's workspace for `args`; the config's warnings are in the result. The key is the
/// caller's to check, once the workspace's trust is decided.
fn prepare(args: &ChatArgs) -> Result<Setup, Error> {
    let cwd = assemble::working_dir()?;
    Ok(workspace::prepare(
        &WorkspaceOptions {
            config_file: args.global.config.clone(),
            trust_project: args.trust_project,
            model: args.model.clone(),
            composition: args.agent_composition.clone(),
            session: args.session(),
        },
        cwd,
    )?)
}

/// The agent with the built-in tools and, when already started, the MCP servers' tools; with
/// `agent.planner_model`, paired with its planner.
fn build_agent(
    args: &ChatArgs,
    setup: &Setup,
    gate: Arc<PolicyGate>,
    mcp: Option<&McpHandle>,
    sink: &mut dyn EventSink,
) -> Result<(Runner, crate::tool::ToolContext), Error> {
    let built = setup.agent(args.attach, args.effort.clone(), gate, mcp, sink)?;
    let mut agent = built.runner;
    if args.plan {
        agent.set_planning(true);
    }
    Ok((agent, built.ctx))
}

fn interactive_chat(args: &ChatArgs, setup: Setup) -> Result<i32, Error> {
    let (tx, rx) = ui::channel();
    let policy = assemble::permission_policy(&setup.config, &setup.cwd)?;
    let project_file = config::paths::project_file(&setup.cwd);
    let trusted = setup.trusted;
    let (home, cwd) = (setup.config.home.clone(), setup.cwd.clone());
    let mcp_policies: Policies = Arc::default();
    let gate = PolicyGate::new(
        policy,
        args.posture.unwrap_or(Posture::Ask),
        Some(Box::new(UiApprover::new(tx.clone()))),
    )
    .with_persist(Box::new(move |rule| {
        if !trusted {
            // The next session would ignore the rule with a warning; say so now instead.
            return Err(UNTRUSTED_ALWAYS.into());
        }
        // A trust bound to the file's old text would end with this edit of our own: re-record
        // that file alone, and only when its trust was stored (not a one-chat
        // `--trust-project`), so no other changed file is trusted on the way.
        let store = TrustStore::new(&home);
        let stored = store.covers(&cwd, config::trust::Bound::ProjectFile);
        config::edit::persist_allow_rule(&project_file, rule).map_err(|e| e.to_string())?;
        if stored {
            store
                .rerecord(&cwd, config::trust::Bound::ProjectFile)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }))
    .with_mcp(late_lookup(Arc::clone(&mcp_policies)))
    .with_reviewer(assemble::reviewer(&setup.config, &setup.settings)?);
    let gate = Arc::new(gate);
    let mut notices = Vec::new();
    let mut collect = |event: Event| {
        if let Event::Notice { level, message } = event {
            notices.push((level, message));
        }
    };
    let (mut agent, ctx) = build_agent(args, &setup, Arc::clone(&gate), None, &mut collect)?;
    agent.set_interact(Arc::new(UiInteract::new(tx.clone())));
    let warning = |message: &String| (NoticeLevel::Warning, message.clone());
    notices.extend(setup.commands.notices.iter().map(warning));
    notices.extend(untrusted_notice(&setup.untrusted).iter().map(warning));
    if args.resume.is_some() && setup.history_only.is_none() {
        notices.push((
            NoticeLevel::Info,
            format!(
                "continuing conversation {} ({} messages)",
                agent.session().id(),
                agent.session().messages().len()
            ),
        ));
    }
    let startup = mcp_startup(args, &setup, &tx, Arc::clone(&mcp_policies));
    let history_only = setup.history_only.as_ref().map(history_view);
    let catalog = Catalog::new(setup.commands.commands.clone(), Vec::new());
    let history_file = history_file(&setup.config, &setup.cwd);
    let parts = ui::Parts {
        tx: tx.clone(),
        rx,
        agent,
        gate: Arc::clone(&gate),
        ctx,
        services: Box::new(ChatServices {
            config: setup.config.clone(),
            cwd: setup.cwd.clone(),
            settings: setup.settings.clone(),
            binding: setup.binding.clone(),
            args: args.clone(),
            gate,
            tx,
            policies: mcp_policies,
        }),
        catalog,
        mcp: Arc::new(NoMcp),
        startup,
        history: History::load(&history_file),
        cwd: setup.cwd.clone(),
        cursor_shape: cursor_shape(setup.config.ui.cursor_shape),
        provider_name: setup.settings.name.clone(),
        model: setup.settings.model.clone(),
        context_window: setup.settings.context_window,
        notices,
        history_only,
    };
    install_panic_hook();
    let outcome = ui::run(parts).map_err(|e| Error::io("setting up the terminal", e))?;
    if outcome.resumable {
        println!(
            "Resume this conversation with: reasonix chat --resume {}",
            outcome.session_id
        );
    } else {
        // Nothing was said: a file holding only the system prompt is not worth keeping.
        let _ = std::fs::remove_file(&outcome.session_path);
    }
    Ok(outcome.code)
}

/// Why an "always allow" answer is not saved in an untrusted workspace.
const UNTRUSTED_ALWAYS: &str = "this workspace is not trusted, so ./reasonix.toml's allow rules \
     are ignored; the rule holds for this session (run 'reasonix trust' to keep saved rules)";

/// The transcript's line about what `./reasonix.toml` could not do; each key also has its own
/// warning on stderr.
fn untrusted_notice(keys: &[String]) -> Option<String> {
    (!keys.is_empty()).then(|| {
        format!(
            "this workspace is not trusted, so ./reasonix.toml may only tighten your settings; ignored: {}; run 'reasonix trust' or restart with --trust-project",
            keys.join(", ")
        )
    })
}

/// The MCP tool policies of the chat's running servers, for the gate: set when they have
/// started, replaced when `/agent` starts another composition's.
type Policies = Arc<Mutex<Option<McpLookup>>>;

/// The gate's view of MCP tool policies, filled in when the servers have started.
fn late_lookup(policies: Policies) -> McpLookup {
    Box::new(move |name| {
        let current = policies.lock().unwrap_or_else(PoisonError::into_inner);
        current.as_ref().and_then(|lookup| lookup(name))
    })
}

/// What the UI shows of a conversation that opens as history only.
fn history_view(err: &crate::composition::CompositionError) -> ui::HistoryOnly {
    ui::HistoryOnly {
        code: err.code.as_str().to_string(),
        reason: err.to_string(),
    }
}

/// Starting the declared MCP servers, for the UI to run once it can ask for launch grants.
/// `None` when no server is declared, and for a history-only conversation, which launches
/// nothing.
fn mcp_startup(
    args: &ChatArgs,
    setup: &Setup,
    tx: &std::sync::mpsc::Sender<ui::Msg>,
    policies: Policies,
) -> Option<ui::Startup> {
    if setup.history_only.is_some() {
        return None;
    }
    let declared = mcp::config::declared(&setup.config, &setup.cwd);
    if declared.servers.is_empty() && declared.problems.is_empty() {
        return None;
    }
    let options = McpOptions {
        trust_project: args.trust_project_mcp,
        interactive: true,
        approver: Some(Arc::new(UiApprover::new(tx.clone())) as Arc<dyn LaunchApprover>),
        events: forward_server_events(tx.clone()),
        elicitor: Some(Arc::new(ui::UiElicitor::new(
            UiInteract::new(tx.clone()),
            tx.clone(),
        ))),
        keep: crate::app::binding::mcp_keep(setup.binding.as_ref()),
        login: true,
        ..McpOptions::default()
    };
    let config = setup.config.clone();
    let cwd = setup.cwd.clone();
    let binding = setup.binding.clone();
    Some(Box::new(move || {
        let mut notices = Vec::new();
        let handle = mcp::start(&config, &cwd, options, &mut |notice| notices.push(notice));
        *policies.lock().unwrap_or_else(PoisonError::into_inner) = Some(handle.tool_policies());
        let tools: Vec<Arc<dyn Tool>> = handle
            .tools()
            .into_iter()
            .map(|tool| tool as Arc<dyn Tool>)
            .collect();
        let watch: Box<dyn crate::tool::source::ToolSource> = Box::new(handle.tool_watch());
        // A bound conversation's MCP tools are pinned as they arrive.
        let pinned = match &binding {
            Some(binding) => crate::app::binding::pin_started(binding, tools, watch, &mut notices),
            None => crate::app::binding::PinnedStart {
                tools,
                source: watch,
                contracts: None,
            },
        };
        Started {
            tools: pinned.tools,
            source: Some(pinned.source),
            mcp: Arc::new(mcp::Host::new(handle)),
            notices,
            contracts: pinned.contracts,
        }
    }))
}

/// A panic on the UI thread restores the terminal before the message is printed; other
/// threads report through the UI, which keeps running.
fn install_panic_hook() {
    let ui_thread = std::thread::current().id();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().id() == ui_thread {
            crate::term::sys::restore_terminal();
            let _ = std::io::stdout().write_all(b"\r\n");
        }
        previous(info);
    }));
}

/// The terminal's cursor for the configured shape.
fn cursor_shape(shape: config::CursorShape) -> CursorShape {
    match shape {
        config::CursorShape::Bar => CursorShape::Bar,
        config::CursorShape::Block => CursorShape::Block,
        config::CursorShape::Underline => CursorShape::Underline,
    }
}

/// `<state>/projects/<slug>/history`: composer history per project.
fn history_file(config: &Config, cwd: &Path) -> PathBuf {
    let sessions = config::paths::sessions_dir(&config.home, cwd);
    sessions
        .parent()
        .map_or_else(|| sessions.join("history"), |p| p.join("history"))
}

struct ChatServices {
    config: Config,
    cwd: PathBuf,
    settings: ProviderSettings,
    /// A new conversation of a bound chat keeps the chat's composition.
    binding: Option<crate::composition::resolve::Binding>,
    /// What `/agent ID` rebuilds the chat with: the flags (after the trust question), the
    /// shared gate, the UI's channel and the gate's MCP policies.
    args: ChatArgs,
    gate: Arc<PolicyGate>,
    tx: std::sync::mpsc::Sender<ui::Msg>,
    policies: Policies,
}

impl ChatServices {
    /// `/agent ID` in a blank chat: everything a chat started with `--agent-composition ID`
    /// on the current model would have, in a new conversation. Nothing changes on a refusal.
    fn switch_composition(&mut self, id: &str) -> Result<ui::Switched, Error> {
        let mut args = self.args.clone();
        args.agent_composition = Some(id.to_string());
        args.resume = None;
        let switched = self.rebuild(args)?;
        let shown = self
            .binding
            .as_ref()
            .map_or("builtin:general", |b| b.id.as_str());
        let message = format!(
            "this conversation now uses {shown} (persona, tools, skills, commands, hooks and \
             MCP servers); it is kept from the first prompt on"
        );
        Ok(ui::Switched {
            message,
            ..switched
        })
    }

    /// The chat for `args` on the current model, assembled as at start: through
    /// [`prepare`] (the binding checks of `--agent-composition` and `--resume`), with its own
    /// agent, tools, commands and MCP servers. Nothing changes on an error; on success the
    /// services follow the new chat.
    fn rebuild(&mut self, mut args: ChatArgs) -> Result<ui::Switched, Error> {
        args.model = Some(format!("{}/{}", self.settings.name, self.settings.model));
        let setup = prepare(&args)?;
        assemble::check_key(&setup.settings)?;
        let mut notices = Vec::new();
        let mut collect = |event: Event| {
            if let Event::Notice { level, message } = event {
                notices.push((level, message));
            }
        };
        let (mut agent, ctx) =
            build_agent(&args, &setup, Arc::clone(&self.gate), None, &mut collect)?;
        agent.set_interact(Arc::new(UiInteract::new(self.tx.clone())));
        notices.extend((setup.commands.notices.iter()).map(|m| (NoticeLevel::Warning, m.clone())));
        *self.policies.lock().unwrap_or_else(PoisonError::into_inner) = None;
        let startup = mcp_startup(&args, &setup, &self.tx, Arc::clone(&self.policies));
        let switched = ui::Switched {
            agent,
            ctx,
            catalog: Catalog::new(setup.commands.commands.clone(), Vec::new()),
            mcp: Arc::new(NoMcp),
            startup,
            notices,
            message: String::new(),
            history_only: setup.history_only.as_ref().map(history_view),
        };
        self.config = setup.config;
        self.binding = setup.binding;
        // A later `/new` or `/agent` starts from these flags, not from the resumed session.
        args.resume = None;
        self.args = args;
        Ok(switched)
    }
}

impl Services for ChatServices {
    fn models(&self) -> Vec<String> {
        let mut models = Vec::new();
        for provider in &self.config.providers {
            for model in provider.model_names() {
                models.push(format!("{}/{model}", provider.name));
            }
        }
        if models.is_empty() {
            models.push(format!("{}/{}", self.settings.name, self.settings.model));
        }
        models
    }

    fn switch_model(&mut self, reference: &str) -> Result<ModelSwitch, String> {
        let settings = self
            .config
            .resolve_model(Some(reference))
            .map_err(|e| e.to_string())?;
        assemble::check_key(&settings).map_err(|e| e.to_string())?;
        let provider = provider::build(settings.clone()).map_err(|e| e.to_string())?;
        self.settings = settings.clone();
        Ok(ModelSwitch {
            provider,
            provider_name: settings.name,
            model: settings.model,
            context_window: settings.context_window,
            prices: settings.prices,
        })
    }

    fn new_session(&mut self) -> Result<Session, String> {
        assemble::new_session(
            &PromptFlags {
                binding: self.binding.clone(),
                id: None,
                ..PromptFlags::default()
            },
            &self.config,
            &self.settings,
            &self.cwd,
        )
        .map_err(|e| Error::from(e).to_string())
    }

    fn sessions(&self) -> Vec<session::Summary> {
        session::list(&config::paths::sessions_dir(&self.config.home, &self.cwd))
    }

    fn resume(&mut self, path: &Path) -> Result<Box<ui::Switched>, String> {
        let mut args = self.args.clone();
        // The conversation keeps its own binding; the chat's choice applies to new ones only.
        args.agent_composition = None;
        args.resume = Some(SessionChoice::Reference(path.display().to_string()));
        args.attach = assemble::Attach::InPlace;
        let chosen = self.args.agent_composition.clone();
        let switched = self.rebuild(args).map_err(|e| e.to_string())?;
        self.args.agent_composition = chosen;
        Ok(Box::new(switched))
    }

    fn fresh(&mut self) -> Result<Box<ui::Switched>, String> {
        let mut args = self.args.clone();
        args.resume = None;
        self.rebuild(args).map(Box::new).map_err(|e| e.to_string())
    }

    fn agent(&mut self, args: &str, blank: bool) -> Result<ui::AgentAnswer, String> {
        let bound = self.binding.as_ref().map(|b| b.id.as_str());
        match super::agent_cmd::slash_agent(&self.config, &self.cwd, bound, args, blank)? {
            SlashAgent::Text(text) => Ok(ui::AgentAnswer::Text(text)),
            SlashAgent::Switch(id) => self
                .switch_composition(&id)
                .map(|switched| ui::AgentAnswer::Switched(Box::new(switched)))
                .map_err(|e| e.to_string()),
        }
    }

    fn persona(&mut self, args: &str) -> Result<String, String> {
        super::agent_cmd::slash_persona(&self.config, args)
    }
}

/// One turn per line of stdin, printed as text, each line through the chat's input path.
/// Built-ins other than `/exit` need the interactive chat. No one can grant a project MCP server's
/// launch here: it needs a stored grant or `--trust-project-mcp`.
fn plain_chat(args: &ChatArgs, setup: Setup) -> Result<i32, Error> {
    if let Some(err) = setup.history_only {
        return Err(err.into());
    }
    let policy = assemble::permission_policy(&setup.config, &setup.cwd)?;
    let mut output = Output::new(Format::Text, false);
    let options = McpOptions {
        trust_project: args.trust_project_mcp,
        ..McpOptions::default()
    };
    let mut warn = |message| {
        output.emit(Event::Notice {
            level: NoticeLevel::Warning,
            message,
        })
    };
    let handle = crate::app::binding::start_mcp(
        setup.binding.as_ref(),
        &setup.config,
        &setup.cwd,
        options,
        &mut warn,
    );
    let gate = Arc::new(
        PolicyGate::new(policy, args.posture.unwrap_or(Posture::Ask), None)
            .with_mcp(handle.tool_policies())
            .with_reviewer(assemble::reviewer(&setup.config, &setup.settings)?),
    );
    let (mut agent, ctx) = build_agent(args, &setup, gate, Some(&handle), &mut output)?;
    let mcp = mcp::Host::new(handle);
    let catalog = Catalog::new(setup.commands.commands.clone(), mcp.prompts());
    let mut code = exit::OK;
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| Error::io("reading stdin", e))?;
        let prepared = match input::interpret(&line, &catalog) {
            None => continue,
            Some(Ok(Input::Builtin(Builtin::Exit, _))) => break,
            Some(Ok(Input::Builtin(builtin, _))) => Err(CommandError::NeedsChat(builtin)),
            Some(Ok(Input::Message(message))) => message
                .prepare(&setup.cwd, &ctx.sandbox, &mcp)
                .map(|turn| (turn, None)),
            Some(Ok(Input::Profile { name, task })) => Ok((Turn::default(), Some((name, task)))),
            Some(Err(err)) => Err(err),
        };
        let (turn, profile) = match prepared {
            Ok(prepared) => prepared,
            Err(err) => {
                output.emit(Event::Notice {
                    level: NoticeLevel::Warning,
                    message: err.to_string(),
                });
                continue;
            }
        };
        for message in turn.notices {
            output.emit(Event::Notice {
                level: NoticeLevel::Warning,
                message,
            });
        }
        output.cancel_on_close(agent.reset_cancel());
        let outcome = match profile {
            Some((name, task)) => agent.run_profile(&name, task, &mut output),
            None => agent.run(turn.text, &mut output),
        };
        if output.closed() {
            // Nobody reads the answers any more: stop quietly, as `run` does.
            return Ok(exit::OUTPUT_CLOSED);
        }
        code = match outcome {
            Ok(_) => exit::OK,
            Err(AgentError::Interrupted) => exit::INTERRUPTED,
            Err(err) => {
                eprintln!(
                    "reasonix: {}",
                    crate::term::sanitize::sanitize(&err.to_string())
                );
                exit::FAILURE
            }
        };
        output.finish_stdout_line();
    }
    Ok(code)
}

/// Relays MCP progress and log notifications to the UI thread as they arrive.
fn forward_server_events(
    ui: std::sync::mpsc::Sender<ui::Msg>,
) -> Option<std::sync::mpsc::Sender<crate::mcp::client::ServerEvent>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("mcp-events".into())
        .spawn(move || {
            for event in rx {
                if ui.send(ui::Msg::Mcp(event)).is_err() {
                    break;
                }
            }
        })
        .ok()?;
    Some(tx)
}
