//! Claude Code's print-mode flags (`claude -p ...`) parsed into what reasonix runs: each flag
//! is accepted with its meaning or refused with one line saying why, never ignored. Only
//! validation happens here (no I/O except reading the files `--system-prompt-file`,
//! `--mcp-config FILE` and `--settings FILE` name, which is part of their value).

use std::path::PathBuf;

use serde_json::Value;

use crate::app::assemble::{Attach, SessionChoice};
use crate::cli::error::Error;
use crate::cli::lex::{Arg, Lexer};
use crate::cli::output::Format;
use crate::cli::Global;
use crate::config::{Layer, PluginConfig};
use crate::permission::claude_tool_list;
use crate::tool::claude_vocabulary;

/// What becomes of one flag of Claude Code's print mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    Accepted,
    /// Refused with this reason (the whole error line is `--flag: reason`).
    Refused(&'static str),
}

/// Every Claude Code print-mode flag reasonix knows, by long name, with its disposition. A
/// test keeps this table, `reasonix help print` and the man page in step.
pub const FLAGS: &[(&str, Disposition)] = &[
    ("print", Disposition::Accepted),
    ("output-format", Disposition::Accepted),
    ("input-format", Disposition::Accepted),
    ("verbose", Disposition::Accepted),
    ("include-partial-messages", Disposition::Accepted),
    ("include-hook-events", Disposition::Accepted),
    ("max-turns", Disposition::Accepted),
    ("continue", Disposition::Accepted),
    ("resume", Disposition::Accepted),
    ("fork-session", Disposition::Accepted),
    ("model", Disposition::Accepted),
    ("system-prompt", Disposition::Accepted),
    ("system-prompt-file", Disposition::Accepted),
    ("append-system-prompt", Disposition::Accepted),
    ("append-system-prompt-file", Disposition::Accepted),
    ("allowedTools", Disposition::Accepted),
    ("disallowedTools", Disposition::Accepted),
    ("tools", Disposition::Accepted),
    ("permission-mode", Disposition::Accepted),
    ("dangerously-skip-permissions", Disposition::Accepted),
    ("allow-dangerously-skip-permissions", Disposition::Accepted),
    ("mcp-config", Disposition::Accepted),
    ("strict-mcp-config", Disposition::Accepted),
    ("add-dir", Disposition::Accepted),
    ("settings", Disposition::Accepted),
    ("setting-sources", Disposition::Accepted),
    ("max-budget-usd", Disposition::Accepted),
    ("json-schema", Disposition::Accepted),
    ("permission-prompt-tool", Disposition::Accepted),
    ("effort", Disposition::Accepted),
    ("session-id", Disposition::Accepted),
    ("fallback-model", Disposition::Accepted),
    ("thinking", Disposition::Accepted),
    (
        "max-thinking-tokens",
        Disposition::Refused(
            "a thinking budget in tokens has no OpenAI-compatible equivalent; --effort sets the model's reasoning effort",
        ),
    ),
    (
        "thinking-display",
        Disposition::Refused(
            "reasonix shows the model's reasoning as it arrives, in thinking blocks; it has no summaries to choose from",
        ),
    ),
    (
        "task-budget",
        Disposition::Refused(
            "reasonix has no task budget; bound the run with --max-budget-usd or --max-turns",
        ),
    ),
    (
        "session-mirror",
        Disposition::Refused(
            "an SDK session store is not supported; reasonix keeps every session itself, under its state directory",
        ),
    ),
    (
        "resume-session-at",
        Disposition::Refused(
            "resuming at a chosen message is not supported; --resume continues a whole session (with --fork-session, a copy)",
        ),
    ),
    (
        "resume-drops-turn",
        Disposition::Refused(
            "resuming at a chosen message is not supported; --resume continues a whole session (with --fork-session, a copy)",
        ),
    ),
    (
        "plugin-dir",
        Disposition::Refused(
            "Claude Code plugins are not supported; MCP servers come from --mcp-config or the config, skills from skill folders",
        ),
    ),
    (
        "agents",
        Disposition::Refused(
            "subagents are skills with `runAs: subagent` (see `reasonix subagent`), not JSON on the command line",
        ),
    ),
    (
        "betas",
        Disposition::Refused("beta headers are Anthropic API features; reasonix speaks the OpenAI-compatible API"),
    ),
    (
        "no-session-persistence",
        Disposition::Refused(
            "every reasonix session is saved (append-only, under the state directory); delete it with `reasonix session` tools if needed",
        ),
    ),
    (
        "replay-user-messages",
        Disposition::Refused("user messages are not echoed back on stdout"),
    ),
];

/// The alternative spellings Claude Code accepts, mapped to the names of [`FLAGS`].
const SPELLINGS: &[(&str, &str)] = &[
    ("allowed-tools", "allowedTools"),
    ("disallowed-tools", "disallowedTools"),
];

/// Claude Code's permission modes and what they are here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClaudeMode {
    /// Claude's `default`: a call that would need a permission and is not pre-allowed is
    /// denied (no one can be asked headless) and listed in `permission_denials`.
    #[default]
    Default,
    /// `acceptEdits`: file edits are allowed; other asks are denied.
    AcceptEdits,
    /// `bypassPermissions` / `--dangerously-skip-permissions`: every ask is allowed (our
    /// yolo); deny rules and the jail still hold.
    BypassPermissions,
    /// `plan`: read-only research ending with a proposed plan.
    Plan,
    /// `dontAsk`: whatever is not pre-allowed is denied.
    DontAsk,
}

impl ClaudeMode {
    pub fn parse(value: &str) -> Result<ClaudeMode, String> {
        Ok(match value {
            "default" | "manual" => ClaudeMode::Default,
            "acceptEdits" => ClaudeMode::AcceptEdits,
            "bypassPermissions" => ClaudeMode::BypassPermissions,
            "plan" => ClaudeMode::Plan,
            "dontAsk" => ClaudeMode::DontAsk,
            "auto" => {
                return Err(
                    "--permission-mode auto: Claude Code's classifier mode is not available; use default, acceptEdits, bypassPermissions, plan or dontAsk".into(),
                )
            }
            other => {
                return Err(format!(
                    "--permission-mode: unknown mode `{other}`; expected default, acceptEdits, bypassPermissions, plan or dontAsk"
                ))
            }
        })
    }

    /// The name the `init` message reports (`permissionMode`).
    pub fn as_str(self) -> &'static str {
        match self {
            ClaudeMode::Default => "default",
            ClaudeMode::AcceptEdits => "acceptEdits",
            ClaudeMode::BypassPermissions => "bypassPermissions",
            ClaudeMode::Plan => "plan",
            ClaudeMode::DontAsk => "dontAsk",
        }
    }
}

/// `--input-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InputFormat {
    #[default]
    Text,
    /// User messages (and, with the Agent SDK, control requests) as JSON lines on stdin.
    StreamJson,
}

/// Everything the command line of print mode says.
#[derive(Debug, Default)]
pub struct PrintFlags {
    pub global: Global,
    /// `text` (the default), `json` or `stream-json`.
    pub output: Option<Format>,
    pub input: InputFormat,
    pub verbose: bool,
    pub partial_messages: bool,
    pub hook_events: bool,
    pub max_turns: Option<u32>,
    pub resume: Option<SessionChoice>,
    pub attach: Attach,
    /// `--session-id UUID`: the id of the new (or forked) session.
    pub session_id: Option<String>,
    /// `--fallback-model REF`: the model a turn goes on with when `model` is overloaded.
    pub fallback_model: Option<String>,
    pub model: Option<String>,
    pub effort: Option<String>,
    /// `--system-prompt` or the text of `--system-prompt-file`; an empty one keeps ours
    /// (the Agent SDK passes `--system-prompt=` when it was given none).
    pub system_prompt: Option<String>,
    pub append_system_prompt: Vec<String>,
    /// Rules in our grammar (Claude Code's tool names are mapped by the rule parser).
    pub allow: Vec<String>,
    pub deny: Vec<String>,
    /// `--tools`: the built-in tools offered, by our names; `None` is all of them.
    pub tools: Option<Vec<String>>,
    pub mode: ClaudeMode,
    /// `--allow-dangerously-skip-permissions`: the session may later switch to
    /// `bypassPermissions` (the SDK's `set_permission_mode`).
    pub bypass_allowed: bool,
    pub mcp_servers: Vec<PluginConfig>,
    pub strict_mcp: bool,
    pub add_dirs: Vec<PathBuf>,
    /// `--setting-sources`: which Claude Code settings files are read (`user`, `project`,
    /// `local`); `None` is Claude Code's default (all of them).
    pub setting_sources: Option<Vec<String>>,
    pub max_budget_usd: Option<f64>,
    /// `--json-schema`: the final answer is JSON matching it (`structured_output`).
    pub json_schema: Option<Value>,
    /// `--permission-prompt-tool stdio`: the SDK answers permission asks over stdin/stdout.
    pub permission_prompt_stdio: bool,
    pub trust_project: bool,
    pub trust_project_mcp: bool,
    /// The prompt's words.
    pub words: Vec<String>,
}

fn usage(message: String) -> Error {
    Error::Usage(message)
}

/// Parses print mode's command line into `flags`. On an error, what came before stays
/// parsed: an `--output-format json` given first still decides how the error is reported.
pub fn parse(flags: &mut PrintFlags, lexer: &mut Lexer) -> Result<(), Error> {
    while let Some(arg) = lexer.next().map_err(Error::Usage)? {
        if flags.global.accept(&arg, lexer)? {
            continue;
        }
        flags.accept(&arg, lexer)?;
        if lexer.has_inline_value() {
            return Err(usage(format!("flag `{}` takes no value", arg.shown())));
        }
    }
    if flags.input == InputFormat::StreamJson && flags.output != Some(Format::StreamJson) {
        return Err(usage(
            "--input-format stream-json needs --output-format stream-json".into(),
        ));
    }
    if flags.permission_prompt_stdio && flags.input != InputFormat::StreamJson {
        return Err(usage(
            "--permission-prompt-tool stdio needs --input-format stream-json (the Agent SDK answers asks over stdin)".into(),
        ));
    }
    if flags.session_id.is_some() && flags.resume.is_some() && flags.attach != Attach::Fork {
        return Err(usage(
            "--session-id names a new session: with --continue or --resume it needs --fork-session (the fork takes the id)".into(),
        ));
    }
    Ok(flags.attach.check(flags.resume.as_ref())?)
}

/// `--thinking MODE`: `adaptive` (the model decides how much it reasons) is what a reasoning
/// model behind an OpenAI-compatible API does anyway; nothing there turns reasoning off.
fn thinking(mode: &str) -> Result<(), Error> {
    match mode {
        "adaptive" => Ok(()),
        "disabled" => Err(usage(
            "--thinking disabled: a model's reasoning cannot be turned off through the OpenAI-compatible API; choose a model without it (--model) or lower it (--effort)".into(),
        )),
        other => Err(usage(format!(
            "--thinking must be adaptive or disabled, got `{other}`"
        ))),
    }
}

/// `--session-id`'s value: a UUID, as Claude Code requires (it also names the session's
/// file, so nothing else may pass).
fn session_uuid(text: &str) -> Result<String, Error> {
    let id = text.trim().to_ascii_lowercase();
    let is_uuid = id.len() == 36
        && id.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        });
    if !is_uuid {
        return Err(usage(format!(
            "--session-id must be a UUID such as 123e4567-e89b-12d3-a456-426614174000, got `{text}`"
        )));
    }
    Ok(id)
}

impl PrintFlags {
    /// Takes one argument; an unknown flag or a refused one is an error.
    fn accept(&mut self, arg: &Arg, lexer: &mut Lexer) -> Result<(), Error> {
        let shown = arg.shown();
        let long = match arg {
            Arg::Value(word) => {
                self.words.push(word.clone());
                return Ok(());
            }
            Arg::Short('p') => "print".to_string(),
            Arg::Short('c') => "continue".to_string(),
            Arg::Short('r') => "resume".to_string(),
            Arg::Short('m') => "model".to_string(),
            Arg::Short(_) => return Err(unknown(&shown)),
            Arg::Long(name) => SPELLINGS
                .iter()
                .find(|(alias, _)| alias == name)
                .map_or(name.clone(), |(_, canonical)| canonical.to_string()),
        };
        let mut value = || lexer.value(&shown).map_err(usage);
        match long.as_str() {
            "print" => {}
            "output-format" => {
                let value = value()?;
                self.output = Some(Format::parse(&value).ok_or_else(|| {
                    usage(format!(
                        "--output-format must be text, json or stream-json, got `{value}`"
                    ))
                })?);
            }
            "input-format" => {
                self.input = match value()?.as_str() {
                    "text" => InputFormat::Text,
                    "stream-json" => InputFormat::StreamJson,
                    other => {
                        return Err(usage(format!(
                            "--input-format must be text or stream-json, got `{other}`"
                        )))
                    }
                }
            }
            "verbose" => self.verbose = true,
            "include-partial-messages" => self.partial_messages = true,
            "include-hook-events" => self.hook_events = true,
            "max-turns" => {
                let value = value()?;
                let turns = value.parse::<u32>().ok().filter(|&n| n > 0);
                self.max_turns = Some(turns.ok_or_else(|| {
                    usage(format!(
                        "--max-turns needs a whole number above 0, got `{value}`"
                    ))
                })?);
            }
            "continue" => self.resume = Some(SessionChoice::Newest),
            "resume" => self.resume = Some(SessionChoice::Reference(value()?)),
            "fork-session" => self.attach = Attach::Fork,
            "session-id" => self.session_id = Some(session_uuid(&value()?)?),
            "model" => self.model = Some(value()?),
            "fallback-model" => self.fallback_model = Some(value()?),
            "effort" => self.effort = Some(value()?),
            "thinking" => thinking(&value()?)?,
            "system-prompt" => self.system_prompt = non_empty(value()?),
            "system-prompt-file" => self.system_prompt = non_empty(read_file(&value()?, &shown)?),
            "append-system-prompt" => self.append_system_prompt.push(value()?),
            "append-system-prompt-file" => {
                let text = read_file(&value()?, &shown)?;
                self.append_system_prompt.push(text);
            }
            "allowedTools" => self.allow.extend(tool_list(&value()?, "--allowedTools")?),
            "disallowedTools" => self.deny.extend(tool_list(&value()?, "--disallowedTools")?),
            "tools" => self.tools = Some(builtin_tools(&value()?)?),
            "permission-mode" => self.mode = ClaudeMode::parse(&value()?).map_err(usage)?,
            "dangerously-skip-permissions" => self.mode = ClaudeMode::BypassPermissions,
            "allow-dangerously-skip-permissions" => self.bypass_allowed = true,
            "mcp-config" => self.mcp_servers.extend(mcp_config(&value()?)?),
            "strict-mcp-config" => self.strict_mcp = true,
            "add-dir" => self.add_dirs.push(PathBuf::from(value()?)),
            "settings" => self.settings(&value()?)?,
            "setting-sources" => self.setting_sources = Some(setting_sources(&value()?)?),
            "max-budget-usd" => {
                let value = value()?;
                let dollars = value
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x > 0.0);
                self.max_budget_usd = Some(dollars.ok_or_else(|| {
                    usage(format!(
                        "--max-budget-usd needs an amount of dollars above 0, e.g. 0.50, got `{value}`"
                    ))
                })?);
            }
            "json-schema" => self.json_schema = Some(json_schema(&value()?)?),
            "permission-prompt-tool" => {
                let tool = value()?;
                if tool != "stdio" {
                    return Err(usage(format!(
                        "--permission-prompt-tool {tool}: only `stdio` (the Agent SDK's can_use_tool) can answer permission asks; an MCP tool as approver is not supported"
                    )));
                }
                self.permission_prompt_stdio = true;
            }
            "trust-project" => self.trust_project = true,
            "trust-project-mcp" => self.trust_project_mcp = true,
            other => {
                return Err(match FLAGS.iter().find(|(name, _)| *name == other) {
                    Some((_, Disposition::Refused(why))) => usage(format!("--{other}: {why}")),
                    _ => unknown(&shown),
                })
            }
        }
        Ok(())
    }

    /// `--settings FILE|JSON`: Claude Code settings given for this run. The permission rules
    /// (`allow`, `deny`, `ask`: an ask is a deny headless), `defaultMode` and
    /// `additionalDirectories` apply; any other key is refused, so nothing in it is
    /// silently dropped.
    fn settings(&mut self, text: &str) -> Result<(), Error> {
        let value = json_or_file(text, "--settings")?;
        let Value::Object(settings) = value else {
            return Err(usage("--settings: expected a JSON object".into()));
        };
        for (key, value) in &settings {
            match key.as_str() {
                "permissions" => self.settings_permissions(value)?,
                "$schema" => {}
                other => {
                    return Err(usage(format!(
                        "--settings: the key `{other}` is not supported in print mode (supported: permissions.allow, permissions.deny, permissions.ask, permissions.defaultMode, permissions.additionalDirectories)"
                    )))
                }
            }
        }
        Ok(())
    }

    fn settings_permissions(&mut self, value: &Value) -> Result<(), Error> {
        let Value::Object(permissions) = value else {
            return Err(usage("--settings: `permissions` must be an object".into()));
        };
        for (key, value) in permissions {
            let strings = || -> Result<Vec<String>, Error> {
                value
                    .as_array()
                    .and_then(|items| {
                        items
                            .iter()
                            .map(|i| i.as_str().map(str::to_string))
                            .collect()
                    })
                    .ok_or_else(|| {
                        usage(format!(
                            "--settings: `permissions.{key}` must be a list of strings"
                        ))
                    })
            };
            match key.as_str() {
                "allow" => self
                    .allow
                    .extend(checked(strings()?, "--settings permissions.allow")?),
                "deny" | "ask" => self
                    .deny
                    .extend(checked(strings()?, "--settings permissions.deny")?),
                "additionalDirectories" => self
                    .add_dirs
                    .extend(strings()?.into_iter().map(PathBuf::from)),
                "defaultMode" => {
                    let mode = value.as_str().ok_or_else(|| {
                        usage("--settings: `permissions.defaultMode` must be a string".into())
                    })?;
                    self.mode = ClaudeMode::parse(mode).map_err(usage)?;
                }
                other => {
                    return Err(usage(format!(
                        "--settings: `permissions.{other}` is not supported in print mode"
                    )))
                }
            }
        }
        Ok(())
    }
}

fn unknown(shown: &str) -> Error {
    usage(format!(
        "unknown flag `{shown}` in print mode; run `reasonix help print` for the Claude Code flags it takes"
    ))
}

fn non_empty(text: String) -> Option<String> {
    (!text.trim().is_empty()).then_some(text)
}

fn read_file(path: &str, flag: &str) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|e| usage(format!("{flag}: cannot read {path}: {e}")))
}

fn tool_list(list: &str, flag: &str) -> Result<Vec<String>, Error> {
    claude_tool_list(list, flag).map_err(|e| usage(e.to_string()))
}

fn checked(rules: Vec<String>, flag: &str) -> Result<Vec<String>, Error> {
    for rule in &rules {
        claude_vocabulary::check_rule_name(rule, flag).map_err(|e| usage(e.to_string()))?;
    }
    Ok(rules)
}

/// `--tools`: `""` for none, `default` for all, else tool names (Claude Code's or ours)
/// mapped to ours. A Claude Code tool reasonix does not have is refused: the list says what
/// the model may use, and it cannot use that.
fn builtin_tools(list: &str) -> Result<Vec<String>, Error> {
    let names = crate::permission::split_rule_list(list);
    if names.iter().any(|n| n == "default") {
        return Ok(claude_vocabulary::TOOLS
            .iter()
            .map(|e| e.ours.to_string())
            .collect());
    }
    names
        .iter()
        .map(|name| {
            claude_vocabulary::our_name(name)
                .or_else(|| {
                    claude_vocabulary::TOOLS
                        .iter()
                        .find(|e| e.ours == name)
                        .map(|e| e.ours)
                })
                .map(str::to_string)
                .ok_or_else(|| {
                    usage(format!(
                        "--tools: `{name}` is not a tool reasonix has; known: {}",
                        claude_vocabulary::TOOLS
                            .iter()
                            .map(|e| claude_vocabulary::claude_name(e.ours))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })
        })
        .collect()
}

/// A value that is JSON when it starts with `{`, else the path of a JSON file.
fn json_or_file(text: &str, flag: &str) -> Result<Value, Error> {
    let trimmed = text.trim_start();
    let (source, json) = if trimmed.starts_with('{') {
        ("the value".to_string(), text.to_string())
    } else {
        (text.to_string(), read_file(text, flag)?)
    };
    serde_json::from_str(&json)
        .map_err(|e| usage(format!("{flag}: {source} is not valid JSON: {e}")))
}

/// `--mcp-config FILE|JSON`: Claude Code's `{"mcpServers": {...}}`, the user's own servers
/// for this run. One value may name several files or JSON texts separated by spaces, as
/// Claude Code's variadic flag takes them.
fn mcp_config(text: &str) -> Result<Vec<PluginConfig>, Error> {
    let value = json_or_file(text, "--mcp-config")?;
    let servers = crate::mcp::config::parse_mcp_json(&value.to_string())
        .map_err(|e| usage(format!("--mcp-config: {e}")))?;
    if value.get("mcpServers").is_none() {
        return Err(usage(
            "--mcp-config: expected {\"mcpServers\": {NAME: {\"command\": ...}}}".into(),
        ));
    }
    Ok(servers
        .into_iter()
        .map(|mut server| {
            server.origin = Layer::Extra;
            server
        })
        .collect())
}

/// The SDK's in-process MCP servers named in its `initialize` request, as `--mcp-config`
/// entries of `type: sdk` would declare them.
pub fn sdk_servers(names: &[String]) -> Result<Vec<PluginConfig>, Error> {
    let servers: serde_json::Map<String, Value> = names
        .iter()
        .map(|name| {
            (
                name.clone(),
                serde_json::json!({"type": "sdk", "name": name}),
            )
        })
        .collect();
    mcp_config(&serde_json::json!({ "mcpServers": servers }).to_string())
}

fn setting_sources(list: &str) -> Result<Vec<String>, Error> {
    let sources: Vec<String> = list
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    for source in &sources {
        if !matches!(source.as_str(), "user" | "project" | "local") {
            return Err(usage(format!(
                "--setting-sources: unknown source `{source}`; expected user, project or local"
            )));
        }
    }
    Ok(sources)
}

fn json_schema(text: &str) -> Result<Value, Error> {
    let schema = json_or_file(text, "--json-schema")?;
    if !schema.is_object() {
        return Err(usage("--json-schema: a JSON Schema is an object".into()));
    }
    Ok(schema)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(args: &[&str]) -> (Result<(), Error>, PrintFlags) {
        let mut lexer = Lexer::new(args.iter().map(|s| s.to_string()));
        let mut flags = PrintFlags::default();
        let result = parse(&mut flags, &mut lexer);
        (result, flags)
    }

    #[test]
    fn the_sdks_command_line_parses_with_each_flag_in_its_place() {
        let (result, flags) = parse_all(&[
            "--output-format",
            "stream-json",
            "--verbose",
            "--system-prompt=",
            "--allowedTools=Read,Bash(git log:*)",
            "--disallowed-tools",
            "Write",
            "--max-turns=3",
            "--model=fake",
            "--permission-mode=acceptEdits",
            "--include-partial-messages",
            "--tools=Read,Grep,bash",
            "--setting-sources=user,project",
            "--max-budget-usd=0.5",
            "--input-format",
            "stream-json",
            "-p",
            "do it",
        ]);
        result.unwrap();
        assert_eq!(flags.output, Some(Format::StreamJson));
        assert_eq!(flags.input, InputFormat::StreamJson);
        assert!(flags.verbose && flags.partial_messages);
        assert_eq!(
            flags.system_prompt, None,
            "an empty --system-prompt keeps ours"
        );
        assert_eq!(flags.allow, vec!["Read", "Bash(git log:*)"]);
        assert_eq!(flags.deny, vec!["Write"]);
        assert_eq!(flags.max_turns, Some(3));
        assert_eq!(flags.mode, ClaudeMode::AcceptEdits);
        assert_eq!(
            flags.tools,
            Some(vec!["read_file".into(), "grep".into(), "bash".into()])
        );
        assert_eq!(flags.max_budget_usd, Some(0.5));
        assert_eq!(flags.words, vec!["do it"]);
    }

    #[test]
    fn refused_flags_say_why_in_one_line_and_unknown_ones_point_at_the_help() {
        for (flag, disposition) in FLAGS {
            let Disposition::Refused(why) = disposition else {
                continue;
            };
            let (result, _) = parse_all(&[&format!("--{flag}"), "x"]);
            assert_eq!(result.unwrap_err().to_string(), format!("--{flag}: {why}"));
        }
        let (result, _) = parse_all(&["--frobnicate"]);
        assert!(result
            .unwrap_err()
            .to_string()
            .contains("reasonix help print"));
        let (result, _) = parse_all(&["--permission-mode", "auto"]);
        assert!(result.unwrap_err().to_string().contains("not available"));
        let (result, _) = parse_all(&["--allowedTools", "Nope"]);
        assert!(result
            .unwrap_err()
            .to_string()
            .contains("unknown tool `Nope`"));
        let (result, _) = parse_all(&["--permission-prompt-tool", "mcp__a__b"]);
        assert!(result.unwrap_err().to_string().contains("only `stdio`"));
        let (result, _) = parse_all(&["--input-format", "stream-json"]);
        assert!(result
            .unwrap_err()
            .to_string()
            .contains("needs --output-format stream-json"));
    }

    #[test]
    fn settings_and_mcp_config_take_json_or_a_file() {
        let (result, flags) = parse_all(&[
            "--settings",
            r#"{"permissions": {"allow": ["Bash(ls:*)"], "deny": ["Grep"], "defaultMode": "plan"}}"#,
            "--mcp-config",
            r#"{"mcpServers": {"srv": {"command": "true"}}}"#,
            "--strict-mcp-config",
        ]);
        result.unwrap();
        assert_eq!(flags.allow, vec!["Bash(ls:*)"]);
        assert_eq!(flags.deny, vec!["Grep"]);
        assert_eq!(flags.mode, ClaudeMode::Plan);
        assert_eq!(flags.mcp_servers.len(), 1);
        assert_eq!(flags.mcp_servers[0].name, "srv");
        assert_eq!(flags.mcp_servers[0].origin, Layer::Extra);
        assert!(flags.strict_mcp);
        let (result, _) = parse_all(&["--settings", r#"{"hooks": {}}"#]);
        assert!(result
            .unwrap_err()
            .to_string()
            .contains("`hooks` is not supported"));
        let (result, _) = parse_all(&["--mcp-config", "/nonexistent/mcp.json"]);
        assert!(result.unwrap_err().to_string().contains("cannot read"));
    }
}
