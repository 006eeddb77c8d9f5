//! Claude Code's print mode (`claude -p`) as a reasonix front end: `reasonix -p`, or bare
//! `reasonix` with `--output-format`/`--input-format`, takes Claude Code's headless flags,
//! runs one session as `reasonix run` does (the same assembly, jail and gate), and writes
//! Claude Code's stream-json messages and result in Claude Code's tool vocabulary. What the
//! model sees stays ours. Flags are `flags`, the output `stream` over `encode`, the permission
//! semantics `approver`, the SDK's control protocol and its sessions (`--input-format stream-json`) `control*`.

pub mod approver;
pub mod control;
pub mod control_approve;
pub mod control_calls;
pub mod control_hooks;
pub mod control_mcp;
pub mod control_session;
pub mod control_turns;
pub mod encode;
pub mod flags;
pub mod init_catalog;
pub mod stream;

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Instant;

use crate::cli::error::{exit, Error};
use crate::cli::lex::Lexer;
use crate::cli::output::Format;
use crate::cli::run::{self, FrontEnd, RunArgs};
use crate::cli::Global;
use crate::permission::Posture;

use flags::{ClaudeMode, InputFormat, PrintFlags};
use stream::{ClaudeStream, StreamOptions};

pub const HELP: &str = "\
Usage: reasonix print [FLAGS] [PROMPT...]
       reasonix -p [FLAGS] [PROMPT...]

Claude Code's print mode: `reasonix -p`, or bare `reasonix` with --output-format or
--input-format, runs one task headless as `claude -p` does and prints Claude Code's output
(text, its result object, or its stream-json messages), with Claude Code's tool names. A
pipeline written for `claude -p` runs unchanged against any OpenAI-compatible model; the
jail, the permission rules and the prompt cache work as in `reasonix run`. With no prompt
argument, piped stdin is the prompt; with one, piped stdin is added to it.

Flags:
  -p, --print                  Print mode (the default of `reasonix print`)
      --output-format FMT      text (default: the final answer), json (the result object) or
                               stream-json (Claude Code's messages, one JSON per line)
      --input-format FMT       text (default) or stream-json (user messages as JSON lines on
                               stdin; needs --output-format stream-json)
      --verbose                Also show notices on stderr (stream-json streams either way)
      --include-partial-messages  stream-json: also stream_event partials (text as it
                               arrives, each tool call as a tool_use block)
      --include-hook-events    stream-json: a system hook_response message per hook run
      --max-turns N            Stop after N tool rounds (result subtype error_max_turns)
  -c, --continue               Continue the newest session of this workspace
  -r, --resume ID              Continue a session by id, unique id prefix or file path
      --fork-session           With --continue/--resume: continue a copy under a new id
      --session-id UUID        The new session's id (with --fork-session: the copy's)
      --model REF              Model: provider name, model name or provider/model
      --fallback-model REF     When the model answers overloaded (HTTP 529 or 503) three times
                               in a row, or fails with another 5xx or a 404 once its retries
                               are spent, the turn goes on with this one (a system
                               model_fallback message says so)
      --effort LEVEL           Reasoning effort sent to the model
      --thinking adaptive      The model decides how much it reasons (what reasoning models
                               do here anyway); `disabled` is refused
      --system-prompt TEXT     Replace the system prompt (empty: keep reasonix's)
      --system-prompt-file F   Replace the system prompt with the text of file F
      --append-system-prompt TEXT  Append to the system prompt (repeatable)
      --append-system-prompt-file F  Append the text of file F to the system prompt
      --allowedTools LIST      Rules allowed without asking, Claude Code names
                               (\"Bash(git log:*) Edit,Read\"); the kebab spelling works too
      --disallowedTools LIST   Rules denied, Claude Code names (kebab spelling too). An
                               unknown tool name in either list is an error naming the known
      --tools LIST             The built-in tools offered: \"\" none, default, or names
                               (\"Bash,Edit,Read\"); MCP tools are not affected
      --permission-mode MODE   default (a call that needs a permission and is not allowed
                               is denied and listed in permission_denials), acceptEdits (file
                               edits allowed), bypassPermissions (everything allowed), plan
                               (research, then the plan is the result), dontAsk (as default)
      --dangerously-skip-permissions  Same as --permission-mode bypassPermissions; deny rules
                               and the jail still hold
      --allow-dangerously-skip-permissions  Let the session switch to bypassPermissions later
      --mcp-config CONFIG      MCP servers from a JSON file or JSON text ({\"mcpServers\": ...});
                               repeatable; they are yours, as trusted as your config
      --strict-mcp-config      Only the --mcp-config servers start
      --add-dir DIR            Another directory the tools may write to (repeatable)
      --settings CONFIG        Claude Code settings (file or JSON): permissions.allow, deny,
                               ask, defaultMode and additionalDirectories; other keys refused
      --setting-sources LIST   Which Claude Code settings files are read: user,project,local
      --max-budget-usd X       Stop once the run cost X dollars (needs the model's prices;
                               result subtype error_max_budget_usd)
      --json-schema SCHEMA     The final answer is JSON matching SCHEMA, returned as the
                               result's structured_output
      --permission-prompt-tool TOOL  stdio: the Agent SDK answers asks (needs --input-format
                               stream-json); an MCP tool is refused
      --trust-project          Trust the whole workspace for this run (reasonix.toml, skills,
                               hooks, .claude/settings, .env, .mcp.json); nothing is stored
      --trust-project-mcp      Launch MCP servers declared by project files without a grant

Refused (one line says why): --agents, --betas, --no-session-persistence,
--replay-user-messages, --permission-mode auto, --max-thinking-tokens, --thinking-display,
--task-budget, --session-mirror, --resume-session-at, --resume-drops-turn, --plugin-dir.

Exit codes as `reasonix run`, except that a refused or missing API key exits 1 as Claude
Code does (run: 3): 0 done, 1 error, 2 usage, 4 a limit, 5 no progress, 130 interrupted, 141
stdout closed.
";

/// Whether the arguments ask for print mode before any command: `-p`, `--print`,
/// `--output-format` or `--input-format` among them (before a `--`).
pub fn requested(args: &[String]) -> bool {
    args.iter().take_while(|a| *a != "--").any(|arg| {
        arg == "-p"
            || arg == "--print"
            || ["--output-format", "--input-format"]
                .iter()
                .any(|flag| arg == flag || arg.starts_with(&format!("{flag}=")))
    })
}

pub fn main(global: Global, lexer: &mut Lexer) -> Result<i32, Error> {
    let started = Instant::now();
    let mut flags = PrintFlags {
        global,
        ..PrintFlags::default()
    };
    let parsed = flags::parse(&mut flags, lexer);
    let mut options = StreamOptions {
        format: flags.output,
        partial_messages: flags.partial_messages,
        hook_events: flags.hook_events,
        permission_mode: flags.mode.as_str(),
        json_schema: flags.json_schema.is_some(),
        verbose: flags.verbose,
    };
    let prompt = parsed.and_then(|()| prompt_words(&flags));
    let (parsed, words) = match prompt {
        Ok(words) => (Ok(()), words),
        Err(err) => (Err(err), Vec::new()),
    };
    // A command line already refused is reported at once, without waiting for stdin.
    let read_initialize = parsed.is_ok();
    let outcome = match run_args(flags, words, read_initialize) {
        Ok((args, structured)) => {
            options.json_schema |= structured;
            let mut stream = ClaudeStream::new(options);
            run::report_run(parsed, &args, started, &mut stream)
        }
        Err(err) => {
            let mut stream = ClaudeStream::new(options);
            run::report_run(Err(err), &RunArgs::default(), started, &mut stream)
        }
    };
    claude_exit(outcome)
}

/// Claude Code exits 1 when the model server refuses the key (or there is none), where
/// `reasonix run` exits 3; a pipeline written for `claude -p` sees Claude Code's code. The
/// message and the `result` are unchanged; every other code is `run`'s.
fn claude_exit(outcome: Result<i32, Error>) -> Result<i32, Error> {
    match outcome {
        Ok(exit::AUTH) => Ok(exit::FAILURE),
        Err(err) if err.exit_code() == exit::AUTH => Err(Error::Failed(err.to_string())),
        other => other,
    }
}

/// The prompt: the words of the command line, with piped stdin added (as `claude -p` reads
/// `cat log | claude -p "explain"`); stdin alone when there are no words. With
/// `--input-format stream-json` stdin is the SDK session's (`control_session`): no words.
fn prompt_words(flags: &PrintFlags) -> Result<Vec<String>, Error> {
    if flags.input == InputFormat::StreamJson {
        return Ok(Vec::new());
    }
    let mut words = flags.words.clone();
    if !words.is_empty() && stdin_has_data() {
        words.push("-".into());
    }
    Ok(words)
}

/// Whether stdin is a file or a pipe (not a terminal, not `/dev/null`): then it carries
/// input for the prompt.
fn stdin_has_data() -> bool {
    if std::io::stdin().is_terminal() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        match std::fs::metadata("/dev/stdin") {
            Ok(meta) => meta.file_type().is_fifo() || (meta.is_file() && meta.len() > 0),
            Err(_) => false,
        }
    }
    #[cfg(not(unix))]
    {
        false
    }
}

/// Print mode's flags as the session `reasonix run` opens, with Claude Code's permission
/// semantics.
/// Print mode's flags (and, in an SDK session, what its `initialize` request sets) as the
/// session `reasonix run` opens; `true` when the final answer is structured output.
fn run_args(
    mut flags: PrintFlags,
    words: Vec<String>,
    read_initialize: bool,
) -> Result<(RunArgs, bool), Error> {
    let mut args = RunArgs::default();
    let (stdin_dash, words): (Vec<String>, Vec<String>) = words.into_iter().partition(|w| w == "-");
    args.own.stdin_dash = !stdin_dash.is_empty();
    args.own.words = words;
    args.common.global = flags.global;
    args.common.model = flags.model;
    args.own.fallback_model = flags.fallback_model;
    args.common.resume = flags.resume;
    args.common.attach = flags.attach;
    args.common.effort = flags.effort;
    args.common.trust_project = flags.trust_project;
    // The whole workspace for the run, `.mcp.json` launches included (as for `run`).
    args.common.trust_project_mcp = flags.trust_project_mcp || flags.trust_project;
    args.common.plan = flags.mode == ClaudeMode::Plan;
    args.own.format = Some(flags.output.unwrap_or(Format::Text));
    args.own.max_steps = flags.max_turns;
    args.own.budget.max_cost_usd = flags.max_budget_usd;
    // With stream-json input the session is the SDK's: several turns, control requests. The
    // TypeScript SDK sends the system prompt, structured output and its in-process MCP
    // servers in its first request, `initialize`, rather than as flags: read it first.
    let sdk = match flags.input {
        InputFormat::StreamJson => Some(
            control_session::SdkLink::stdio()
                .map_err(|e| Error::Failed(format!("control: reading stdin: {e}")))?,
        ),
        _ => None,
    };
    let initialize = sdk
        .as_ref()
        .filter(|_| read_initialize)
        .and_then(control_session::SdkLink::first_initialize);
    if let Some(init) = initialize {
        if init.system_prompt.is_some() {
            flags.system_prompt = init.system_prompt;
        }
        flags.append_system_prompt.extend(init.append_system_prompt);
        if let Some(schema) = init.json_schema {
            flags.json_schema = Some(schema);
        }
        flags
            .mcp_servers
            .extend(flags::sdk_servers(&init.sdk_mcp_servers)?);
    }
    let structured = flags.json_schema.is_some();
    args.own.system_prompt = flags.system_prompt;
    args.own.append_system_prompt = flags.append_system_prompt;
    if let Some(schema) = &flags.json_schema {
        args.own.append_system_prompt.push(format!(
            "Your final answer must be only a JSON value that matches this JSON Schema, with no other text and no code fence:\n{schema}"
        ));
    }
    args.own.permissions.allow = flags.allow;
    args.own.permissions.deny = flags.deny;
    let mode = flags.mode;
    let ask_sdk = sdk.clone().filter(|_| flags.permission_prompt_stdio);
    if mode == ClaudeMode::BypassPermissions {
        args.common.posture = Some(Posture::Yolo);
    } else {
        args.common.posture = Some(Posture::Ask);
        args.front.approver = Some(Box::new(move || {
            let first = Box::new(approver::Headless { mode });
            match &ask_sdk {
                None => first as Box<dyn crate::permission::Approver>,
                Some(link) => Box::new(control_approve::AfterPrintMode {
                    first,
                    sdk: control_approve::SdkApprover::new(
                        Arc::clone(&link.calls),
                        crate::tool::claude_vocabulary::to_claude,
                        crate::tool::claude_vocabulary::from_claude,
                        Arc::clone(&link.current),
                    ),
                }),
            }
        }));
    }
    // An SDK session's in-process servers answer through its control channel, and its
    // prompts arrive as they are, not through the chat's input path.
    args.front.mcp_channel = sdk
        .as_ref()
        .map(|link| Arc::clone(&link.calls) as Arc<dyn crate::mcp::host_channel::HostChannel>);
    args.front.prompt_as_is = sdk.is_some();
    args.sdk = sdk;
    args.front = FrontEnd {
        tools: flags.tools,
        add_dirs: flags.add_dirs,
        mcp_servers: flags.mcp_servers,
        strict_mcp: flags.strict_mcp,
        setting_sources: flags.setting_sources,
        session_id: flags.session_id,
        ..args.front
    };
    Ok((args, structured))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_refused_key_exits_1_as_claude_code_and_every_other_code_is_runs() {
        let auth = || {
            Error::Provider(crate::provider::ProviderError::MissingKey {
                provider: "p".into(),
                api_key_env: "K".into(),
            })
        };
        assert_eq!(auth().exit_code(), exit::AUTH);
        let err = claude_exit(Err(auth())).unwrap_err();
        assert_eq!(err.exit_code(), exit::FAILURE);
        assert_eq!(err.to_string(), auth().to_string());
        assert_eq!(claude_exit(Ok(exit::AUTH)).unwrap(), exit::FAILURE);
        for code in [
            exit::OK,
            exit::MAX_STEPS,
            exit::NO_PROGRESS,
            exit::INTERRUPTED,
        ] {
            assert_eq!(claude_exit(Ok(code)).unwrap(), code);
        }
        let usage = claude_exit(Err(Error::Usage("u".into()))).unwrap_err();
        assert_eq!(usage.exit_code(), exit::USAGE);
    }

    #[test]
    fn print_mode_is_asked_for_by_its_flags_before_a_double_dash() {
        assert!(requested(&strings(&["-p", "hi"])));
        assert!(requested(&strings(&["--model", "x", "--print"])));
        assert!(requested(&strings(&[
            "--output-format=stream-json",
            "--verbose"
        ])));
        assert!(requested(&strings(&["--input-format", "stream-json"])));
        assert!(!requested(&strings(&["--model", "x"])));
        assert!(!requested(&strings(&["--", "-p"])));
    }
}
