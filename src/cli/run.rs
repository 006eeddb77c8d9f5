//! `reasonix run`: one task, no chat. Reads the prompt, builds the agent from config and
//! flags, streams events to the chosen output format and maps the outcome to an exit code.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::sync::{Arc, PoisonError};
use std::time::Instant;

use super::flags::{self, CommonFlags};
use super::lex::{Arg, Lexer};
use super::output::{Format, Output, Report, RunResult};
use super::Global;
use crate::agent::driver::Runner;
use crate::agent::events::{Event, NoticeLevel};
use crate::agent::runner::{AgentError, Budget, Finish, Spent};
use crate::app::assemble::{self, PermissionFlags, ProjectFlags, PromptFlags};
use crate::app::delegate::Tally;
pub use crate::app::FrontEnd;
use crate::app::{self, Opened, ProfileRun, SessionOptions};
use crate::cancel::CancelToken;
use crate::cli::error::{exit, Error};
use crate::permission::{claude_tool_list, Posture};
use crate::tool::collab::{Answer, Interact, PlanReview, Question};

pub const HELP: &str = concat!(
    "\
Usage: reasonix run [FLAGS] [PROMPT...]

Runs the agent on one task without a chat and exits. The prompt comes from the arguments;
with no prompt argument, piped stdin is the prompt. `-` appends piped stdin to the prompt
as a <stdin> block.

Flags:
  -m, --model REF              Model: provider name, model name or provider/model
      --fallback-model REF     When the model answers overloaded (HTTP 529 or 503) three times
                               in a row, or fails with another 5xx or a 404 once its retries
                               are spent, the turn goes on with this one
      --max-steps N            Stop after N tool rounds (exit 4, subtype error_max_turns, if
                               the model wants more); default agent.max_steps_headless (200)
      --max-tokens-total N     Stop once the run's requests used N tokens, prompt plus
                               completion (exit 4, subtype error_max_tokens_total)
      --max-budget-usd X       Stop once the run cost X dollars by the model's prices (exit 4,
                               subtype error_max_budget_usd; needs prices for the model)
      --output-format FMT      text (default), json (final object only), stream-json (JSONL events)
  -p, --print                  Print only the final answer
      --output-last-message F  Also write the final answer to file F
      --system-prompt TEXT     Replace the system prompt
      --append-system-prompt T Append to the system prompt (repeatable)
      --show-thinking          Show the model's reasoning on stderr (text format)
      --effort LEVEL           Reasoning effort sent to the model (e.g. low, medium, high)
  -c, --continue               Continue the newest session of this workspace
      --resume ID|PATH         Continue a session by id, unique id prefix or file path
      --fork-session           With --continue/--resume: continue a copy under a new id
                               (the original may be in use by another run)
      --record FILE            Save every provider exchange to FILE (JSONL)
      --replay FILE            Serve model replies from a recording instead of the network
      --trust-project          Trust the whole workspace for this run as `reasonix trust`
                               would (reasonix.toml, skills, commands, hooks, .claude/
                               settings, .env, .mcp.json launches); nothing is stored
      --trust-project-mcp      Launch MCP servers declared by project files without a grant
      --agent-composition ID   Bind a new conversation to an agent composition (builtin:minimal,
                               user:NAME, project:NAME, or `default`: your saved default);
                               see `reasonix agent`

Plan mode:
      --plan                   Start in plan mode: the model researches (MCP writers and
                               untrusted MCP readers are blocked) and ends by proposing a plan
                               with exit_plan_mode; the run stops there with the plan as its
                               result (subtype \"plan\", exit 0, --output-last-message gets it)
      --approve-plan           With --plan: approve the plan and carry it out in the same run
                               (the approved-plan window allows its edits without asking)

Goal mode (see the README, Goal mode):
      --goal                   The prompt is a goal: after each answer the run continues
                               until the model reports it complete (exit 0), the same blocked
                               state is reported 3 times (exit 5, subtype error_goal_blocked)
                               or the continuation limit is reached (exit 4, subtype
                               error_goal_limit); the result has a `goal` object
      --research               A goal with the AutoResearch protocol and a run directory under
                               .reasonix/autoresearch/ (implies --goal)
      --simple                 No AutoResearch: with --goal a lightweight goal; without it the
                               prompt is never upgraded to a research goal
      --max-continuations N    Safety limit on continuation turns (default 20); --max-steps
                               bounds the tool rounds of the whole goal

The prompt means what it would in the chat: /mcp__SERVER__PROMPT [ARGS] runs that MCP prompt,
/NAME [ARGS] a custom command, @PATH attaches a file or directory and @SERVER:URI an MCP
resource; a quoted \"two words\" is one argument.

Permissions (no one can be asked in a headless run):
      --permission-mode MODE   ask (default: calls that would ask are allowed), auto (writer
                               fallback allowed), yolo (every ask allowed), strict (every ask
                               denied, and ./reasonix.toml's allow rules and a wider mode are
                               ignored even when trusted: for untrusted prompts). Deny rules
                               always block.
      --allow RULE             Allow rule, e.g. 'Bash(cargo test:*)' (repeatable)
      --deny RULE              Deny rule, e.g. 'Bash(git push:*)' (repeatable)
      --allowedTools LIST      Claude Code alias: comma/space separated allow rules
      --disallowedTools LIST   Claude Code alias: comma/space separated deny rules

A round that repeats an earlier one (same calls, same results) gets the model one note;
another repeat ends the run (exit 5, subtype error_loop, naming the calls).

",
    limits_help!(),
    "
Exit codes: 0 done, 1 error during execution, 2 usage or config error, 3 authentication
failure, 4 the step limit, a budget or a goal's continuation limit reached, 5 no progress,
a loop of repeated calls or a goal blocked, 6 an agent composition refused (agent_composition.*), 130 interrupted, 141 stdout closed (a pipe whose reader
exited, e.g. `| head -1`: the run stops before its next tool or request, printing nothing).
",
);

#[derive(Default)]
pub struct RunArgs {
    pub common: CommonFlags,
    pub own: RunFlags,
    /// `reasonix subagent try|run NAME`: the run is that profile's.
    pub profile: Option<ProfileRun>,
    /// What another front end (Claude print mode) changes in the run.
    pub front: FrontEnd,
    /// `--input-format stream-json`: the turns come from the Agent SDK's session on stdin.
    pub sdk: Option<crate::claude::control_session::SdkLink>,
}

/// The flags only `run` has.
#[derive(Debug, Default)]
pub struct RunFlags {
    pub max_steps: Option<u32>,
    /// `--max-tokens-total`, `--max-budget-usd`.
    pub budget: Budget,
    pub format: Option<Format>,
    pub print: bool,
    pub output_last_message: Option<PathBuf>,
    pub system_prompt: Option<String>,
    pub append_system_prompt: Vec<String>,
    pub show_thinking: bool,
    pub record: Option<PathBuf>,
    pub replay: Option<PathBuf>,
    /// `--fallback-model REF`.
    pub fallback_model: Option<String>,
    pub words: Vec<String>,
    pub stdin_dash: bool,
    /// `--allow`/`--deny` and their aliases; the posture is in [`CommonFlags`].
    pub permissions: PermissionFlags,
    /// `--approve-plan`: the plan `--plan` ends with is approved, and the run goes on.
    pub approve_plan: bool,
    /// `--goal`, `--research`, `--simple`, `--max-continuations`.
    pub goal: super::goal::GoalFlags,
}

fn usage(message: String) -> Error {
    Error::Usage(message)
}

/// Fills `args` from the command line. On an error, what was parsed before it stays in
/// `args`: an `--output-format` given earlier still decides how the error is reported.
fn parse(args: &mut RunArgs, lexer: &mut Lexer) -> Result<(), Error> {
    let own = &mut args.own;
    flags::parse("run", &mut args.common, lexer, |arg, lexer| {
        own.accept(arg, lexer)
    })?;
    if args.own.approve_plan && !args.common.plan {
        return Err(usage(
            "--approve-plan approves the plan of a plan-mode run; add --plan".into(),
        ));
    }
    args.own.goal.check(args.common.plan)
}

impl RunFlags {
    /// Consumes `arg` if it is one of `run`'s own flags or a prompt word.
    fn accept(&mut self, arg: &Arg, lexer: &mut Lexer) -> Result<bool, Error> {
        let flag = arg.shown();
        let mut value = || lexer.value(&flag).map_err(usage);
        match arg {
            Arg::Value(word) if word == "-" => self.stdin_dash = true,
            Arg::Value(word) => self.words.push(word.clone()),
            Arg::Long(n) if n == "fallback-model" => self.fallback_model = Some(value()?),
            Arg::Long(n) if n == "max-steps" => {
                let value = value()?;
                self.max_steps = Some(value.parse().map_err(|_| {
                    usage(format!("--max-steps needs a whole number, got `{value}`"))
                })?);
            }
            Arg::Long(n) if n == "max-tokens-total" => {
                let value = value()?;
                let tokens = value.parse::<u64>().ok().filter(|&n| n > 0);
                self.budget.max_tokens_total = Some(tokens.ok_or_else(|| {
                    usage(format!(
                        "--max-tokens-total needs a whole number above 0, got `{value}`"
                    ))
                })?);
            }
            Arg::Long(n) if n == "max-budget-usd" => {
                let value = value()?;
                let dollars = value
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x > 0.0);
                self.budget.max_cost_usd = Some(dollars.ok_or_else(|| {
                    usage(format!(
                        "--max-budget-usd needs an amount of dollars above 0, e.g. 0.50, got `{value}`"
                    ))
                })?);
            }
            Arg::Long(n) if n == "output-format" => {
                let value = value()?;
                self.format = Some(Format::parse(&value).ok_or_else(|| {
                    usage(format!(
                        "--output-format must be text, json or stream-json, got `{value}`"
                    ))
                })?);
            }
            Arg::Short('p') => self.print = true,
            Arg::Long(n) if n == "print" => self.print = true,
            Arg::Long(n) if n == "output-last-message" => {
                self.output_last_message = Some(value()?.into())
            }
            Arg::Long(n) if n == "system-prompt" => self.system_prompt = Some(value()?),
            Arg::Long(n) if n == "append-system-prompt" => self.append_system_prompt.push(value()?),
            Arg::Long(n) if n == "show-thinking" => self.show_thinking = true,
            Arg::Long(n) if n == "approve-plan" => self.approve_plan = true,
            Arg::Long(n) if n == "record" => self.record = Some(value()?.into()),
            Arg::Long(n) if n == "replay" => self.replay = Some(value()?.into()),
            Arg::Long(n) if n == "allow" => self.permissions.allow.push(value()?),
            Arg::Long(n) if n == "deny" => self.permissions.deny.push(value()?),
            Arg::Long(n) if n == "allowedTools" => self.permissions.allow.extend(
                claude_tool_list(&value()?, "--allowedTools").map_err(|e| usage(e.to_string()))?,
            ),
            Arg::Long(n) if n == "disallowedTools" => self.permissions.deny.extend(
                claude_tool_list(&value()?, "--disallowedTools")
                    .map_err(|e| usage(e.to_string()))?,
            ),
            _ => return self.goal.accept(arg, lexer),
        }
        Ok(true)
    }
}

/// The prompt from the arguments and, when asked for or when there is nothing else, stdin.
/// Stdin is never read when a prompt argument is given without `-`, so an idle, never-closed
/// stdin (common in CI) cannot hang the run.
fn read_prompt(args: &RunFlags) -> Result<String, Error> {
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

pub fn main(global: Global, lexer: &mut Lexer) -> Result<i32, Error> {
    run_main(global, lexer, None)
}

/// `reasonix subagent try|run NAME ...`: the rest of the line is parsed as `run`'s flags and
/// prompt, and the run is the profile's (its body the system prompt, its model and effort).
pub fn profile_main(global: Global, lexer: &mut Lexer, profile: ProfileRun) -> Result<i32, Error> {
    run_main(global, lexer, Some(profile))
}

fn run_main(global: Global, lexer: &mut Lexer, profile: Option<ProfileRun>) -> Result<i32, Error> {
    let started = Instant::now();
    let mut args = RunArgs {
        profile,
        ..RunArgs::default()
    };
    args.common.global = global;
    let parsed = parse(&mut args, lexer);
    let format = match (args.own.format, args.own.print) {
        (Some(format), _) => format,
        (None, true) => Format::Print,
        (None, false) => Format::Text,
    };
    let mut output = Output::new(format, args.own.show_thinking);
    report_run(parsed, &args, started, &mut output)
}

/// Runs the session `args` describe with `output` as its report, after `parsed` (the
/// command line's verdict): the one path of `reasonix run` and Claude print mode.
pub fn report_run(
    parsed: Result<(), Error>,
    args: &RunArgs,
    started: Instant,
    output: &mut dyn Report,
) -> Result<i32, Error> {
    let outcome = parsed.and_then(|()| execute(args, started, output));
    if output.closed() {
        // Like a CLI killed by SIGPIPE: no report, no error line, whatever stopped the run.
        return Ok(exit::OUTPUT_CLOSED);
    }
    if let Err(err) = &outcome {
        // The README promises the JSON formats a `result` object on every exit path, also
        // when the run never started (no key, bad config, no room for the session).
        if !output.finished() {
            output.abort(&RunResult::before_start(
                err.to_string(),
                started.elapsed().as_millis() as u64,
            ));
        }
    }
    outcome
}

fn execute(args: &RunArgs, started: Instant, output: &mut dyn Report) -> Result<i32, Error> {
    args.common.global.enter_dir()?;
    let cwd = assemble::working_dir()?;
    // An SDK session's prompts arrive on stdin once the session runs.
    let prompt = match args.sdk {
        Some(_) => String::new(),
        None => read_prompt(&args.own)?,
    };
    let project = ProjectFlags {
        trust: args.common.trust_project,
        strict: args.common.posture == Some(Posture::Strict),
        claude_setting_sources: args.front.setting_sources.clone(),
    };
    let loaded = assemble::load_config(args.common.global.config.as_deref(), &cwd, project)?;
    super::print_warnings(&loaded.warnings);
    let options = SessionOptions {
        model: args.common.model.clone(),
        fallback_model: args.own.fallback_model.clone(),
        effort: args.common.effort.clone(),
        replay: args.own.replay.clone(),
        record: args.own.record.clone(),
        composition: args.common.agent_composition.clone(),
        session: args.common.session(),
        attach: args.common.attach,
        profile: args.profile.clone(),
        prompt_flags: PromptFlags {
            system_prompt: args.own.system_prompt.clone(),
            append_system_prompt: args.own.append_system_prompt.clone(),
            binding: None,
            id: None,
        },
        permissions: PermissionFlags {
            posture: args.common.posture,
            ..args.own.permissions.clone()
        },
        trust_project_mcp: args.common.trust_project_mcp,
        max_steps: args.own.max_steps,
        budget: args.own.budget.clone(),
        prompt: prompt.clone(),
        command: "run PROMPT",
    };
    let opened = app::open(loaded.config, &cwd, &options, &args.front, output)?;
    let Opened {
        built,
        settings,
        planner,
        prompt: prepared,
        mcp,
        config,
    } = opened;
    let ctx = built.ctx;
    output.cancel_on_close(ctx.cancel.clone());
    if let Err(err) = crate::term::sys::cancel_on_interrupt(ctx.cancel.clone()) {
        output.emit(Event::Notice {
            level: NoticeLevel::Warning,
            message: format!("cannot install signal handlers ({err}); Ctrl-C will not save state"),
        });
    }
    let mut agent = built.runner;
    output.catalog(&crate::claude::init_catalog::InitCatalog::of_session(
        &config,
        &cwd,
        ctx.skills.as_deref(),
        &settings,
        &mcp,
    ));
    output.emit(Event::Init {
        session_id: agent.session().id().to_string(),
        model: settings.model.clone(),
        provider: settings.name.clone(),
        tools: built.tool_names,
        cwd: cwd.display().to_string(),
    });
    if args.common.plan {
        agent.set_planning(true);
        output.emit(Event::PlanMode { planning: true });
    }
    if args.own.approve_plan {
        agent.set_interact(Arc::new(ApprovePlans));
    }
    // The cost is known only when every model that may serve the run has prices.
    let priced = settings.prices.is_some()
        && planner.as_ref().is_none_or(|p| p.prices.is_some())
        && agent
            .options()
            .fallback
            .as_ref()
            .is_none_or(|f| f.prices.is_some());
    if let Some(link) = &args.sdk {
        let mut turns = crate::claude::control_turns::RunTurns {
            agent: &mut agent,
            output,
            args,
            tally: &built.tally,
            children: &built.children,
            config: &config,
            cwd: &cwd,
            priced,
            settings,
            mcp: &mcp,
        };
        return crate::claude::control_turns::serve(&mut turns, link, Arc::clone(&built.gate));
    }
    let upgrade = !args.common.plan && args.profile.is_none();
    let mut goal = super::goal::start(&args.own.goal, &prompt, &cwd, upgrade, output)?;
    let (outcome, goal_run) = match goal.as_mut() {
        None => (agent.run(prepared, output), None),
        Some(goal) => {
            let (outcome, run) = super::goal::drive(goal, prepared, output, |input, sink| {
                let finish = agent.run(input, sink)?;
                Ok((finish, agent.stats().final_text.clone()))
            });
            (outcome, Some(run))
        }
    };
    let children = built
        .tally
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let ran = Ran {
        outcome,
        goal: goal_run,
    };
    finish(args, &agent, &children, ran, priced, started, output)
}

/// `--approve-plan`: stands in for the person who reviews the plan, and approves it. It
/// answers nothing else: an `ask` still gets no answer, as in any headless run.
struct ApprovePlans;

impl Interact for ApprovePlans {
    fn ask(&self, _: &Question, _: &CancelToken) -> Option<Answer> {
        None
    }

    fn review_plan(&self, _: &str, _: &CancelToken) -> Option<PlanReview> {
        Some(PlanReview::Approve)
    }

    fn is_person(&self) -> bool {
        false
    }
}

/// How the run ended: the agent's outcome and, in goal mode, the goal's.
pub(crate) struct Ran {
    pub outcome: Result<Finish, AgentError>,
    pub goal: Option<super::goal::GoalRun>,
}

/// `priced`: the model has prices, so the run's cost is known.
pub(crate) fn finish(
    args: &RunArgs,
    agent: &Runner,
    children: &Tally,
    ran: Ran,
    priced: bool,
    started: Instant,
    output: &mut dyn Report,
) -> Result<i32, Error> {
    // The children's usage and cost are part of the run's.
    let mut stats = agent.total_stats();
    stats.usage.add(&children.usage);
    stats.cost_usd += children.cost_usd;
    // A plan-mode run's answer is its plan, not the model's last words.
    let Ran { outcome, goal } = ran;
    let answer = match &outcome {
        Ok(Finish::Plan(plan)) => plan.clone(),
        // A goal's answer without its status block; the block is the result's `goal`.
        _ if goal.is_some() => crate::agent::goal::strip_report(&stats.final_text).to_string(),
        _ => stats.final_text.clone(),
    };
    let (mut subtype, mut code, mut error) = match &outcome {
        Ok(Finish::Answered) => ("success", exit::OK, None),
        Ok(Finish::StepLimit) => (
            "error_max_turns",
            exit::MAX_STEPS,
            Some(format!(
                "stopped: the step limit was reached after {} tool rounds; raise it with --max-steps N or agent.max_steps_headless",
                stats.tool_rounds
            )),
        ),
        Ok(Finish::Plan(_)) => ("plan", exit::OK, None),
        Ok(Finish::NoProgress) => ("error_no_progress", exit::NO_PROGRESS, None),
        Ok(Finish::Budget(spent)) => (
            match spent {
                Spent::Tokens { .. } => "error_max_tokens_total",
                Spent::Cost { .. } => "error_max_budget_usd",
            },
            exit::MAX_STEPS,
            Some(format!("stopped: {spent}")),
        ),
        Err(err @ AgentError::Loop(_)) => ("error_loop", exit::NO_PROGRESS, Some(err.to_string())),
        Err(AgentError::Interrupted) => ("error_interrupted", exit::INTERRUPTED, None),
        Err(AgentError::Provider(err)) => (
            "error_during_execution",
            crate::cli::error::provider_exit_code(err),
            Some(err.to_string()),
        ),
        Err(err) => (
            "error_during_execution",
            exit::FAILURE,
            Some(err.to_string()),
        ),
    };
    if let Some((goal_subtype, goal_code, goal_error)) =
        goal.as_ref().and_then(|g| g.verdict.clone())
    {
        (subtype, code, error) = (goal_subtype, goal_code, Some(goal_error));
    }
    // Written before the result object, so a failure to write it is in the result.
    if let Some(path) = &args.own.output_last_message {
        if let Err(err) = crate::fsutil::write_atomic(path, answer.as_bytes(), None) {
            let message = format!("writing {}: {err}", path.display());
            if error.is_some() {
                eprintln!("reasonix: {message}");
            } else {
                (subtype, code, error) = ("error_during_execution", exit::FAILURE, Some(message));
            }
        }
    }
    let result = RunResult {
        subtype,
        is_error: code != exit::OK,
        duration_ms: started.elapsed().as_millis() as u64,
        num_turns: stats.requests,
        result: answer,
        error: error.clone(),
        session_id: Some(agent.session().id().to_string()),
        total_cost_usd: priced.then_some(stats.cost_usd),
        usage: stats.usage,
        goal: goal.map(|g| g.json),
        models: agent.models(),
        finish_reason: outcome.is_ok().then_some(stats.finish_reason).flatten(),
        api_error: matches!(outcome, Err(AgentError::Provider(_))),
    };
    output.finish(&result);
    if output.closed() {
        return Ok(exit::OUTPUT_CLOSED);
    }
    match (code, error) {
        (exit::INTERRUPTED, _) => eprintln!(
            "reasonix: interrupted; resume with `reasonix run --resume {}`",
            agent.session().id()
        ),
        (_, Some(error)) => eprintln!("reasonix: {}", crate::term::sanitize::sanitize(&error)),
        _ => {}
    }
    Ok(code)
}

#[cfg(test)]
mod limits_help_tests {
    use crate::config::file::AgentConfig;
    use crate::config::limits::{DEFAULT_IMAGE_BYTES_PER_REQUEST, DEFAULT_MCP_CALLS_PER_ROUND};
    use crate::tool::builtin::view_image::{
        MAX_IMAGES_PER_ROUND, MAX_IMAGE_BYTES, MAX_ROUND_IMAGE_BYTES,
    };

    /// The help states each cap with the default the code uses, and names its key.
    #[test]
    fn the_help_states_every_cap_with_its_default_and_key() {
        let agent = AgentConfig::default();
        let mib = |bytes: u64| format!("{} MiB", bytes / (1024 * 1024));
        let help = super::HELP.split_whitespace().collect::<Vec<_>>().join(" ");
        let chat = crate::cli::chat::HELP
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        for stated in [
            format!("{DEFAULT_MCP_CALLS_PER_ROUND} MCP calls in one reply (agent.max_mcp_calls_per_round)"),
            format!("{} subagents started by one reply's calls (agent.max_subagents_per_round)", agent.max_subagents_per_round),
            format!("{} over the run (agent.max_subagents_per_run)", agent.max_subagents_per_run),
            format!("{} of images, decoded, in one request", mib(DEFAULT_IMAGE_BYTES_PER_REQUEST)),
            "(agent.max_image_bytes_per_request)".to_string(),
            format!("{MAX_IMAGES_PER_ROUND} images attached in one round, {} together", mib(MAX_ROUND_IMAGE_BYTES)),
            format!("{} for one image", mib(MAX_IMAGE_BYTES as u64)),
        ] {
            assert!(help.contains(&stated), "run --help lacks {stated:?}");
            assert!(chat.contains(&stated), "chat --help lacks {stated:?}");
        }
        assert_eq!(agent.max_mcp_calls_per_round, DEFAULT_MCP_CALLS_PER_ROUND);
        assert_eq!(
            agent.max_image_bytes_per_request,
            DEFAULT_IMAGE_BYTES_PER_REQUEST
        );
    }
}
