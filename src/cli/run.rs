//! `reasonix run`: one task, no chat. Reads the prompt, builds the agent from config and
//! flags, streams events to the chosen output format and maps the outcome to an exit code.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::guard::{self, PermissionFlags};
use super::lex::{Arg, Lexer};
use super::output::{Format, Output, RunResult};
use super::{unknown_flag, Global};
use crate::agent::compaction::ContextOptions;
use crate::agent::events::{Event, EventSink, NoticeLevel};
use crate::agent::prompt::{self, PromptInputs};
use crate::agent::runner::{Agent, AgentError, Finish, Options};
use crate::agent::session::{self, Header, Session};
use crate::config::{self, Config, LoadOptions};
use crate::error::{exit, Error};
use crate::mcp::{self, McpHandle, McpOptions};
use crate::permission::split_rule_list;
use crate::provider::{self, Message, ProviderError, ProviderSettings};
use crate::tool::{builtin, Registry, ToolContext};

pub const HELP: &str = "\
Usage: reasonix run [FLAGS] [PROMPT...]

Runs the agent on one task without a chat and exits. The prompt comes from the arguments;
with no prompt argument, piped stdin is the prompt. `-` appends piped stdin to the prompt
as a <stdin> block.

Flags:
  -m, --model REF              Model: provider name, model name or provider/model
      --max-steps N            Stop after N tool rounds (exit 4 if the model wants more)
      --output-format FMT      text (default), json (final object only), stream-json (JSONL events)
  -p, --print                  Print only the final answer
      --output-last-message F  Also write the final answer to file F
      --system-prompt TEXT     Replace the system prompt
      --append-system-prompt T Append to the system prompt (repeatable)
      --show-thinking          Show the model's reasoning on stderr (text format)
      --effort LEVEL           Reasoning effort sent to the model (e.g. low, medium, high)
  -c, --continue               Continue the newest session of this workspace
      --resume ID|PATH         Continue a session by id, unique id prefix or file path
      --record FILE            Save every provider exchange to FILE (JSONL)
      --replay FILE            Serve model replies from a recording instead of the network
      --trust-project-mcp      Launch MCP servers declared by project files without a grant

A prompt starting with /mcp__SERVER__PROMPT [ARGS] runs that MCP prompt; @SERVER:URI in the
prompt attaches that MCP resource.

Permissions (no one can be asked in a headless run):
      --permission-mode MODE   ask (default: calls that would ask are allowed), auto (writer
                               fallback allowed), yolo (every ask allowed), strict (every ask
                               denied: for untrusted prompts). Deny rules always block.
      --allow RULE             Allow rule, e.g. 'Bash(cargo test:*)' (repeatable)
      --deny RULE              Deny rule, e.g. 'Bash(git push:*)' (repeatable)
      --allowedTools LIST      Claude Code alias: comma/space separated allow rules
      --disallowedTools LIST   Claude Code alias: comma/space separated deny rules

Exit codes: 0 done, 1 error during execution, 2 usage or config error, 3 authentication
failure, 4 --max-steps reached, 130 interrupted.
";

#[derive(Debug, Default)]
struct RunArgs {
    global: Global,
    model: Option<String>,
    max_steps: Option<u32>,
    format: Option<Format>,
    print: bool,
    output_last_message: Option<PathBuf>,
    system_prompt: Option<String>,
    append_system_prompt: Vec<String>,
    show_thinking: bool,
    effort: Option<String>,
    resume: Option<Resume>,
    record: Option<PathBuf>,
    replay: Option<PathBuf>,
    trust_project_mcp: bool,
    words: Vec<String>,
    stdin_dash: bool,
    permissions: PermissionFlags,
}

#[derive(Debug)]
enum Resume {
    Newest,
    Reference(String),
}

fn usage(message: String) -> Error {
    Error::Usage(message)
}

fn parse(global: Global, lexer: &mut Lexer) -> Result<RunArgs, Error> {
    let mut args = RunArgs {
        global,
        ..RunArgs::default()
    };
    while let Some(arg) = lexer.next().map_err(usage)? {
        if args.global.accept(&arg, lexer)? {
            continue;
        }
        let flag = match &arg {
            Arg::Long(name) => format!("--{name}"),
            Arg::Short(c) => format!("-{c}"),
            Arg::Value(_) => String::new(),
        };
        match arg {
            Arg::Value(word) if word == "-" => args.stdin_dash = true,
            Arg::Value(word) => args.words.push(word),
            Arg::Short('m') => args.model = Some(lexer.value(&flag).map_err(usage)?),
            Arg::Long(ref n) if n == "model" => {
                args.model = Some(lexer.value(&flag).map_err(usage)?)
            }
            Arg::Long(ref n) if n == "max-steps" => {
                let value = lexer.value(&flag).map_err(usage)?;
                args.max_steps = Some(value.parse().map_err(|_| {
                    usage(format!("--max-steps needs a whole number, got `{value}`"))
                })?);
            }
            Arg::Long(ref n) if n == "output-format" => {
                let value = lexer.value(&flag).map_err(usage)?;
                args.format = Some(Format::parse(&value).ok_or_else(|| {
                    usage(format!(
                        "--output-format must be text, json or stream-json, got `{value}`"
                    ))
                })?);
            }
            Arg::Short('p') => args.print = true,
            Arg::Long(ref n) if n == "print" => args.print = true,
            Arg::Long(ref n) if n == "output-last-message" => {
                args.output_last_message = Some(lexer.value(&flag).map_err(usage)?.into())
            }
            Arg::Long(ref n) if n == "system-prompt" => {
                args.system_prompt = Some(lexer.value(&flag).map_err(usage)?)
            }
            Arg::Long(ref n) if n == "append-system-prompt" => args
                .append_system_prompt
                .push(lexer.value(&flag).map_err(usage)?),
            Arg::Long(ref n) if n == "show-thinking" => args.show_thinking = true,
            Arg::Long(ref n) if n == "effort" => {
                args.effort = Some(lexer.value(&flag).map_err(usage)?)
            }
            Arg::Short('c') => args.resume = Some(Resume::Newest),
            Arg::Long(ref n) if n == "continue" => args.resume = Some(Resume::Newest),
            Arg::Long(ref n) if n == "resume" => {
                args.resume = Some(Resume::Reference(lexer.value(&flag).map_err(usage)?))
            }
            Arg::Long(ref n) if n == "record" => {
                args.record = Some(lexer.value(&flag).map_err(usage)?.into())
            }
            Arg::Long(ref n) if n == "permission-mode" => args
                .permissions
                .set_posture(&lexer.value(&flag).map_err(usage)?)?,
            Arg::Long(ref n) if n == "allow" => args
                .permissions
                .allow
                .push(lexer.value(&flag).map_err(usage)?),
            Arg::Long(ref n) if n == "deny" => args
                .permissions
                .deny
                .push(lexer.value(&flag).map_err(usage)?),
            Arg::Long(ref n) if n == "allowedTools" => args
                .permissions
                .allow
                .extend(split_rule_list(&lexer.value(&flag).map_err(usage)?)),
            Arg::Long(ref n) if n == "disallowedTools" => args
                .permissions
                .deny
                .extend(split_rule_list(&lexer.value(&flag).map_err(usage)?)),
            Arg::Long(ref n) if n == "replay" => {
                args.replay = Some(lexer.value(&flag).map_err(usage)?.into())
            }
            Arg::Long(ref n) if n == "trust-project-mcp" => args.trust_project_mcp = true,
            other => return Err(unknown_flag("run", &other)),
        }
        if lexer.has_inline_value() {
            return Err(usage(format!("flag `{flag}` takes no value")));
        }
    }
    Ok(args)
}

/// The prompt from the arguments and, when asked for or when there is nothing else, stdin.
/// Stdin is never read when a prompt argument is given without `-`, so an idle, never-closed
/// stdin (common in CI) cannot hang the run.
fn read_prompt(args: &RunArgs) -> Result<String, Error> {
    let mut prompt = args.words.join(" ");
    let stdin_piped = !std::io::stdin().is_terminal();
    let read_stdin = args.stdin_dash || (args.words.is_empty() && stdin_piped);
    if read_stdin {
        let mut input = String::new();
        std::io::stdin()
            .read_to_string(&mut input)
            .map_err(|e| Error::io("reading the prompt from stdin", e))?;
        if args.words.is_empty() {
            prompt = input;
        } else {
            prompt.push_str(&format!("\n\n<stdin>\n{}\n</stdin>", input.trim_end()));
        }
    }
    if prompt.trim().is_empty() {
        return Err(usage(
            "empty prompt; pass it as an argument (`reasonix run \"fix the failing test\"`) or pipe it on stdin".into(),
        ));
    }
    Ok(prompt)
}

fn load_config(global: &Global, cwd: &Path) -> Result<Config, Error> {
    let options = LoadOptions::from_env(cwd.to_path_buf(), global.config.clone())?;
    let loaded = config::load(&options)?;
    for warning in &loaded.warnings {
        eprintln!("reasonix: warning: {warning}");
    }
    Ok(loaded.config)
}

/// A key is required unless the endpoint is a plain-http server (a local model) or a replay.
fn check_key(settings: &ProviderSettings) -> Result<(), Error> {
    let local = settings.base_url.starts_with("http://")
        || settings
            .chat_url
            .as_deref()
            .is_some_and(|u| u.starts_with("http://"));
    if settings.api_key.is_none() && settings.kind != "replay" && !local {
        return Err(Error::Provider(ProviderError::Auth {
            status: 0,
            api_key_env: settings.api_key_env.clone(),
            message: format!(
                "no API key for provider `{}`: set ${} or run `reasonix setup`",
                settings.name, settings.api_key_env
            ),
        }));
    }
    Ok(())
}

fn registry(config: &Config, sink: &mut dyn EventSink) -> Registry {
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

/// Runs a leading `/mcp__server__prompt` and attaches `@server:uri` resources.
fn expand_mcp(mcp: &McpHandle, prompt: String, sink: &mut dyn EventSink) -> Result<String, Error> {
    let expansion = mcp
        .expand_message(&prompt)
        .map_err(|e| usage(e.to_string()))?;
    for message in expansion.notices {
        sink.emit(Event::Notice {
            level: NoticeLevel::Warning,
            message,
        });
    }
    Ok(expansion.text)
}

fn open_session(
    args: &RunArgs,
    config: &Config,
    settings: &ProviderSettings,
    cwd: &Path,
) -> Result<Session, Error> {
    let dir = config::paths::sessions_dir(&config.home, cwd);
    let session_err = |e: session::SessionError| Error::Failed(e.to_string());
    match &args.resume {
        Some(Resume::Newest) => {
            let path = session::latest(&dir).ok_or_else(|| {
                usage(format!(
                    "no session to continue in {}; start one with `reasonix run PROMPT`",
                    cwd.display()
                ))
            })?;
            Session::open(&path).map_err(session_err)
        }
        Some(Resume::Reference(reference)) => {
            let projects = config::paths::state_dir(&config.home).join("projects");
            let path = session::find(reference, &dir, &projects).map_err(|e| match e {
                session::SessionError::NotFound(_) | session::SessionError::Ambiguous { .. } => {
                    usage(e.to_string())
                }
                other => session_err(other),
            })?;
            Session::open(&path).map_err(session_err)
        }
        None => {
            let header = Header::new(session::new_id(), &settings.name, &settings.model, cwd);
            let mut session = Session::create(&dir, header).map_err(session_err)?;
            let system = system_prompt(args, config, cwd)?;
            session.push(Message::system(system)).map_err(session_err)?;
            Ok(session)
        }
    }
}

fn system_prompt(args: &RunArgs, config: &Config, cwd: &Path) -> Result<String, Error> {
    let agent = &config.agent;
    let base = match (
        &args.system_prompt,
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
    append.extend(args.append_system_prompt.iter().cloned());
    Ok(prompt::system_prompt(&PromptInputs {
        base,
        append,
        cwd,
        home: &config.home,
        environment: config.environment.enabled,
        extra_tools: &config.environment.tools,
    }))
}

pub fn main(global: Global, lexer: &mut Lexer) -> Result<i32, Error> {
    let started = Instant::now();
    let args = parse(global, lexer)?;
    args.global.enter_dir()?;
    let cwd = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .map_err(|e| Error::io("reading the working directory", e))?;
    let prompt = read_prompt(&args)?;
    let config = load_config(&args.global, &cwd)?;
    let mut settings = config.resolve_model(args.model.as_deref())?;
    if let Some(replay) = &args.replay {
        settings.kind = "replay".into();
        settings.replay_file = Some(replay.clone());
    }
    settings.record_file = args.record.clone();
    check_key(&settings)?;
    let format = match (args.format, args.print) {
        (Some(format), _) => format,
        (None, true) => Format::Print,
        (None, false) => Format::Text,
    };
    let mut output = Output::new(format, args.show_thinking);
    let provider_handle = provider::build(settings.clone())?;
    let mut tools = registry(&config, &mut output);
    let mcp_options = McpOptions {
        trust_project: args.trust_project_mcp,
        ..McpOptions::default()
    };
    let mcp = mcp::start(&config, &cwd, mcp_options, &mut output);
    mcp.register(&mut tools);
    let prompt = expand_mcp(&mcp, prompt, &mut output)?;
    let session = open_session(&args, &config, &settings, &cwd)?;
    let mut ctx = ToolContext::new(cwd.clone());
    ctx.bash_timeout = match config.tools.bash_timeout_seconds {
        0 => None,
        secs => Some(std::time::Duration::from_secs(secs)),
    };
    ctx.secret_env = std::sync::Arc::new(config.secret_env_names());
    ctx.sandbox = std::sync::Arc::new(guard::sandbox_policy(&config, &cwd)?);
    let gate = guard::gate(&config, &cwd, &args.permissions, None)?.with_mcp(mcp.tool_policies());
    ctx.state = Some(std::sync::Arc::new(builtin::history::StatePaths::new(
        &config::paths::state_dir(&config.home),
        config::paths::sessions_dir(&config.home, &cwd),
    )));
    if let Err(err) = crate::term::sys::cancel_on_interrupt(ctx.cancel.clone()) {
        output.emit(Event::Notice {
            level: NoticeLevel::Warning,
            message: format!("cannot install signal handlers ({err}); Ctrl-C will not save state"),
        });
    }
    let options = Options {
        max_steps: args.max_steps,
        max_parallel_tools: config.agent.max_parallel_tools as usize,
        temperature: config.agent.temperature,
        max_tokens: config.agent.max_tokens,
        reasoning_effort: args
            .effort
            .clone()
            .or(config.agent.reasoning_effort.clone()),
        prices: settings.prices,
        context: ContextOptions {
            window: settings.context_window,
            snip_ratio: config.agent.tool_result_snip_ratio,
            compact_ratio: config.agent.compact_ratio,
            force_ratio: config.agent.compact_force_ratio,
            archive_dir: Some(config::paths::state_dir(&config.home).join("archive")),
        },
    };
    output.emit(Event::Init {
        session_id: session.id().to_string(),
        model: settings.model.clone(),
        provider: settings.name.clone(),
        tools: tools.names(),
        cwd: cwd.display().to_string(),
    });
    let mut agent = Agent::new(
        provider_handle,
        tools,
        Box::new(gate),
        session,
        ctx,
        options,
    );
    let outcome = agent.run(prompt, &mut output);
    finish(&args, &agent, outcome, started, &mut output)
}

fn finish(
    args: &RunArgs,
    agent: &Agent,
    outcome: Result<Finish, AgentError>,
    started: Instant,
    output: &mut Output,
) -> Result<i32, Error> {
    let stats = agent.stats();
    let (subtype, code, error) = match &outcome {
        Ok(Finish::Answered) => ("success", exit::OK, None),
        Ok(Finish::StepLimit) => ("error_max_turns", exit::MAX_STEPS, None),
        Err(AgentError::Interrupted) => ("error_interrupted", exit::INTERRUPTED, None),
        Err(AgentError::Provider(err)) => (
            "error_during_execution",
            crate::error::provider_exit_code(err),
            Some(err.to_string()),
        ),
        Err(err) => (
            "error_during_execution",
            exit::FAILURE,
            Some(err.to_string()),
        ),
    };
    let result = RunResult {
        subtype,
        is_error: code != exit::OK,
        duration_ms: started.elapsed().as_millis() as u64,
        num_turns: stats.requests,
        result: stats.final_text.clone(),
        error: error.clone(),
        session_id: agent.session().id().to_string(),
        total_cost_usd: stats.cost_usd,
        usage: stats.usage,
    };
    output.finish(&result);
    if let Some(path) = &args.output_last_message {
        crate::fsutil::write_atomic(path, stats.final_text.as_bytes(), None)
            .map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
    }
    match (code, error) {
        (exit::INTERRUPTED, _) => eprintln!(
            "reasonix: interrupted; resume with `reasonix run --resume {}`",
            agent.session().id()
        ),
        (_, Some(error)) => eprintln!("reasonix: {error}"),
        _ => {}
    }
    Ok(code)
}
