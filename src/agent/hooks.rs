//! Hooks: the user's own commands run at points of the loop, compatible with Claude Code's
//! hook scripts (the event as JSON on stdin; exit 2, or a JSON `decision: "block"`, blocks with
//! the reason shown to the model). They come from `[[hooks]]` in the config and from the
//! `hooks` object of the workspace's `.claude/settings.json`; the CLI gathers them, and project
//! ones only in a trusted workspace.
//!
//! Hooks only tighten: a block or a request for a fresh approval is honoured, while an "allow"
//! answer is ignored, so no hook can turn a deny or an ask into an allow. A hook that fails
//! (another exit code, a timeout, unreadable output) does not block, as in Claude Code; its
//! failure is reported. Every run is an [`Event::Hook`], and the commands run in the same jail
//! and with the same scrubbed environment as `bash`. A hook may instead be a callback of the
//! program that drives reasonix (a Claude Agent SDK hook, [`HookCallback`]); its JSON answer is
//! read by the same rules, so it tightens only too.

use std::sync::Arc;
use std::time::{Duration, Instant};

use regex_lite::Regex;
use serde_json::{json, Map, Value};

use super::events::{Event, EventSink};
use crate::cancel::CancelToken;
use crate::sandbox::process::{self, Exit, Stop};
use crate::tool::{builtin, ToolContext};

/// How long a hook may run when its entry names no timeout (Claude Code's default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Where in the loop a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// Before a tool call is judged by the permission gate.
    PreToolUse,
    /// After a tool call returned its result.
    PostToolUse,
    /// Before the user's message starts a turn.
    UserPromptSubmit,
    /// When a call needs an approval (from the user, or resolved without one headless).
    PermissionRequest,
    /// When the model has answered and the turn would end.
    Stop,
    /// When a subagent has answered (a child agent's `Stop`).
    SubagentStop,
    /// When a session starts or is resumed.
    SessionStart,
    /// When reasonix waits for the user (an approval, a question, a plan to review).
    Notification,
}

impl HookEvent {
    pub const ALL: [HookEvent; 8] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::UserPromptSubmit,
        HookEvent::PermissionRequest,
        HookEvent::Stop,
        HookEvent::SubagentStop,
        HookEvent::SessionStart,
        HookEvent::Notification,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PermissionRequest => "PermissionRequest",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::Notification => "Notification",
        }
    }

    pub fn parse(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// Events whose matcher is a tool name.
    fn has_tool(self) -> bool {
        matches!(
            self,
            HookEvent::PreToolUse | HookEvent::PostToolUse | HookEvent::PermissionRequest
        )
    }
}

/// A hook that runs in the program driving reasonix (an Agent SDK callback), not as a command.
pub trait HookCallback: Send + Sync {
    /// The hook's JSON answer to `input` (the same object a command hook reads on stdin), or
    /// why there is none (a timeout, an error in the callback, the connection gone).
    fn call(
        &self,
        input: &Value,
        tool_use_id: Option<&str>,
        timeout: Duration,
        cancel: &CancelToken,
    ) -> Result<Value, String>;
}

/// A callback with how its failure counts.
#[derive(Clone)]
pub struct Callback {
    pub run: Arc<dyn HookCallback>,
    /// A failed callback blocks (the SDK's `onFailure: "block"`) instead of being reported.
    pub block_on_failure: bool,
}

impl std::fmt::Debug for Callback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Callback")
            .field("block_on_failure", &self.block_on_failure)
            .finish_non_exhaustive()
    }
}

/// One configured hook.
#[derive(Debug, Clone)]
pub struct Hook {
    pub event: HookEvent,
    /// `None` matches every tool (an empty matcher or `*`).
    matcher: Option<Regex>,
    pub matcher_text: String,
    /// The shell command; for a callback hook, the name it is shown under.
    pub command: String,
    pub timeout: Duration,
    /// Where it was declared, for messages.
    pub origin: String,
    /// Set for a hook that is a callback of the driving program rather than a command.
    pub callback: Option<Callback>,
}

impl Hook {
    /// A hook from its parts; a matcher that is not a valid pattern is an error naming it.
    pub fn new(
        event: &str,
        matcher: &str,
        command: &str,
        timeout: Option<Duration>,
        origin: &str,
    ) -> Result<Hook, String> {
        let event = HookEvent::parse(event).ok_or_else(|| {
            let names: Vec<&str> = HookEvent::ALL.iter().map(|e| e.as_str()).collect();
            format!(
                "{origin}: unknown hook event `{event}`; use one of {}",
                names.join(", ")
            )
        })?;
        if command.trim().is_empty() {
            return Err(format!(
                "{origin}: a {} hook has no command",
                event.as_str()
            ));
        }
        let trimmed = matcher.trim();
        let pattern = (!trimmed.is_empty() && trimmed != "*")
            .then(|| {
                Regex::new(&format!("^(?:{trimmed})$")).map_err(|e| {
                    format!("{origin}: the hook matcher `{trimmed}` is not a valid pattern ({e})")
                })
            })
            .transpose()?;
        Ok(Hook {
            event,
            matcher: pattern,
            matcher_text: trimmed.to_string(),
            command: command.to_string(),
            // Held to a day, like every configured timeout: `.claude/settings.json` is not
            // saturated by the config loader.
            timeout: timeout
                .filter(|t| !t.is_zero())
                .unwrap_or(DEFAULT_TIMEOUT)
                .min(Duration::from_secs(crate::config::MAX_TIMEOUT_SECONDS)),
            origin: origin.to_string(),
            callback: None,
        })
    }

    /// A hook answered by `callback` (shown as `name`) instead of a command.
    pub fn with_callback(
        event: &str,
        matcher: &str,
        name: &str,
        timeout: Option<Duration>,
        origin: &str,
        callback: Callback,
    ) -> Result<Hook, String> {
        let mut hook = Hook::new(event, matcher, name, timeout, origin)?;
        hook.callback = Some(callback);
        Ok(hook)
    }

    /// Whether the hook applies to `tool`: by our name or the Claude Code name of the same
    /// tool, so `Bash` or `Edit|Write` matchers written for Claude Code keep working.
    fn matches(&self, tool: Option<&str>) -> bool {
        let (Some(pattern), Some(tool)) = (&self.matcher, tool) else {
            return true;
        };
        pattern.is_match(tool) || claude_name(tool).is_some_and(|alias| pattern.is_match(alias))
    }
}

/// The Claude Code name of a built-in tool, for matchers and hook input (the one vocabulary,
/// `tool::claude_vocabulary`).
pub fn claude_name(tool: &str) -> Option<&'static str> {
    crate::tool::claude_vocabulary::mapped_claude_name(tool)
}

/// Reads the `hooks` object of a Claude Code `settings.json`:
/// `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command":
/// "...", "timeout": 60}]}]}}`. Entries of another `type` are reported and skipped.
pub fn from_claude_settings(text: &str, origin: &str) -> (Vec<Hook>, Vec<String>) {
    let mut hooks = Vec::new();
    let mut problems = Vec::new();
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(e) => {
            return (
                hooks,
                vec![format!("{origin}: not JSON ({e}); its hooks are ignored")],
            )
        }
    };
    let Some(events) = value.get("hooks").and_then(Value::as_object) else {
        return (hooks, problems);
    };
    for (event, groups) in events {
        for group in groups.as_array().into_iter().flatten() {
            let matcher = group.get("matcher").and_then(Value::as_str).unwrap_or("");
            for entry in group
                .get("hooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let kind = entry
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("command");
                if kind != "command" {
                    problems.push(format!(
                        "{origin}: a {event} hook of type `{kind}` is skipped; only `command` hooks run"
                    ));
                    continue;
                }
                let command = entry.get("command").and_then(Value::as_str).unwrap_or("");
                let timeout = entry
                    .get("timeout")
                    .and_then(Value::as_u64)
                    .map(Duration::from_secs);
                match Hook::new(event, matcher, command, timeout, origin) {
                    Ok(hook) => hooks.push(hook),
                    Err(problem) => problems.push(problem),
                }
            }
        }
    }
    (hooks, problems)
}

/// What the hooks of one event decided, together.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decision {
    /// A hook blocked; the reasons, one per blocking hook.
    pub blocked: Vec<String>,
    /// A hook asked for a fresh approval from a person, with its reasons.
    pub ask: Vec<String>,
    /// Text hooks add to the conversation (UserPromptSubmit, SessionStart, PostToolUse).
    pub context: Vec<String>,
}

impl Decision {
    pub fn is_blocked(&self) -> bool {
        !self.blocked.is_empty()
    }

    pub fn block_reason(&self) -> String {
        self.blocked.join("\n")
    }
}

/// Facts every hook input carries.
#[derive(Debug, Clone, Default)]
pub struct Base {
    pub session_id: String,
    pub transcript_path: String,
    /// `default`, `plan`, `acceptEdits` (auto) or `bypassPermissions` (yolo).
    pub permission_mode: String,
}

/// The hooks of a session.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    hooks: Arc<Vec<Hook>>,
}

impl Hooks {
    pub fn new(hooks: Vec<Hook>) -> Hooks {
        Hooks {
            hooks: Arc::new(hooks),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    pub fn list(&self) -> &[Hook] {
        &self.hooks
    }

    /// Whether any hook would run for `event` and `tool`, so callers can skip building input.
    pub fn wants(&self, event: HookEvent, tool: Option<&str>) -> bool {
        self.hooks
            .iter()
            .any(|h| h.event == event && (!event.has_tool() || h.matches(tool)))
    }

    /// Runs the hooks of `event` (those matching `tool`, for tool events) one after another,
    /// each with `fields` plus the common fields as JSON on stdin, and combines their answers.
    pub fn fire(
        &self,
        event: HookEvent,
        tool: Option<&str>,
        fields: Map<String, Value>,
        base: &Base,
        ctx: &ToolContext,
        sink: &mut dyn EventSink,
    ) -> Decision {
        let mut decision = Decision::default();
        let matching: Vec<&Hook> = self
            .hooks
            .iter()
            .filter(|h| h.event == event && (!event.has_tool() || h.matches(tool)))
            .collect();
        if matching.is_empty() {
            return decision;
        }
        let mut input = fields;
        input.insert("session_id".into(), json!(base.session_id));
        input.insert("transcript_path".into(), json!(base.transcript_path));
        input.insert("cwd".into(), json!(ctx.cwd.display().to_string()));
        input.insert("permission_mode".into(), json!(base.permission_mode));
        input.insert("hook_event_name".into(), json!(event.as_str()));
        let input = Value::Object(input);
        let stdin = Arc::new(input.to_string().into_bytes());
        for hook in matching {
            let started = Instant::now();
            let answer = match &hook.callback {
                Some(callback) => run_callback(hook, callback, &input, ctx),
                None => run_one(hook, &stdin, ctx),
            };
            let (outcome, message) = answer.record(&mut decision, hook);
            sink.emit(Event::Hook {
                event: event.as_str(),
                command: hook.command.clone(),
                tool: tool.map(str::to_string),
                outcome,
                message,
                duration_ms: started.elapsed().as_millis() as u64,
            });
        }
        decision
    }
}

/// What one hook run came to.
enum Answer {
    /// Exit 0: stdout, which may be a JSON reply.
    Done(String),
    /// Exit 2: stderr is the reason.
    Block(String),
    /// Anything else: not blocking, reported.
    Failed(String),
}

impl Answer {
    /// Adds this answer to `decision`; returns the outcome word and a message for the event.
    fn record(self, decision: &mut Decision, hook: &Hook) -> (&'static str, Option<String>) {
        let blocked_by = || {
            format!(
                "blocked by the {} hook `{}`",
                hook.event.as_str(),
                hook.command
            )
        };
        match self {
            Answer::Block(reason) => {
                let reason = if reason.trim().is_empty() {
                    blocked_by()
                } else {
                    reason.trim().to_string()
                };
                decision.blocked.push(reason.clone());
                ("blocked", Some(reason))
            }
            Answer::Failed(message) => ("error", Some(message)),
            Answer::Done(stdout) => {
                let trimmed = stdout.trim();
                let Some(reply) = serde_json::from_str::<Value>(trimmed)
                    .ok()
                    .filter(Value::is_object)
                else {
                    if !trimmed.is_empty() && takes_plain_context(hook.event) {
                        decision.context.push(trimmed.to_string());
                    }
                    return ("ok", None);
                };
                json_reply(&reply, decision, hook, blocked_by)
            }
        }
    }
}

/// Plain stdout becomes context only where Claude Code adds it to the conversation.
fn takes_plain_context(event: HookEvent) -> bool {
    matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart)
}

fn json_reply(
    reply: &Value,
    decision: &mut Decision,
    hook: &Hook,
    blocked_by: impl Fn() -> String,
) -> (&'static str, Option<String>) {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let specific = reply.get("hookSpecificOutput");
    if let Some(context) = text(specific.and_then(|s| s.get("additionalContext"))) {
        decision.context.push(context);
    }
    let reason = text(reply.get("reason"))
        .or_else(|| text(specific.and_then(|s| s.get("permissionDecisionReason"))))
        .or_else(|| text(reply.get("stopReason")))
        .filter(|r| !r.trim().is_empty())
        .unwrap_or_else(&blocked_by);
    let permission = text(specific.and_then(|s| s.get("permissionDecision")))
        .or_else(|| text(reply.get("decision")).filter(|d| d == "approve" || d == "allow"));
    let block = text(reply.get("decision")).as_deref() == Some("block")
        || reply.get("continue") == Some(&Value::Bool(false))
        || permission.as_deref() == Some("deny");
    if block {
        decision.blocked.push(reason.clone());
        return ("blocked", Some(reason));
    }
    // Claude Code runs the call with a hook's `updatedInput`; a hook here only tightens, so
    // the call runs as the model made it, and the hook's author hears so.
    let rewrite = specific.and_then(|s| s.get("updatedInput")).is_some();
    let ignored = |what: &str| {
        format!(
            "the {} hook `{}` answered {what}, which is ignored: hooks can only tighten",
            hook.event.as_str(),
            hook.command
        )
    };
    match permission.as_deref() {
        Some("ask") => {
            decision.ask.push(reason.clone());
            ("ask", Some(reason))
        }
        Some("allow") | Some("approve") if rewrite => {
            ("ok", Some(ignored("allow with an updatedInput")))
        }
        Some("allow") | Some("approve") => ("ok", Some(ignored("allow"))),
        _ if rewrite => ("ok", Some(ignored("an updatedInput"))),
        _ => ("ok", None),
    }
}

/// Asks the driving program's callback; its JSON answer is read as a command hook's stdout.
fn run_callback(hook: &Hook, callback: &Callback, input: &Value, ctx: &ToolContext) -> Answer {
    let tool_use_id = input.get("tool_use_id").and_then(Value::as_str);
    match callback
        .run
        .call(input, tool_use_id, hook.timeout, &ctx.cancel)
    {
        Ok(reply) if reply.is_object() => Answer::Done(reply.to_string()),
        Ok(_) => Answer::Done(String::new()),
        Err(e) if callback.block_on_failure => Answer::Block(format!(
            "the {} hook `{}` failed and is set to block on failure: {e}",
            hook.event.as_str(),
            hook.command
        )),
        Err(e) => Answer::Failed(format!("{e}; not blocking")),
    }
}

/// Runs one hook in the jail `bash` uses, with the input on stdin.
fn run_one(hook: &Hook, stdin: &Arc<Vec<u8>>, ctx: &ToolContext) -> Answer {
    let mut spec = builtin::bash::shell_command(&hook.command, Some(hook.timeout), ctx);
    let project = ctx.cwd.display().to_string();
    spec.env_set
        .push(("REASONIX_PROJECT_DIR".into(), project.clone()));
    spec.env_set.push(("CLAUDE_PROJECT_DIR".into(), project));
    spec.stdin = Some(Arc::clone(stdin));
    spec.stderr_apart = true;
    spec.kill_grace = Duration::from_millis(200);
    let spec = match ctx.sandbox.confine_command(spec) {
        Ok(spec) => spec,
        Err(e) => return Answer::Failed(format!("could not jail the hook: {e}")),
    };
    let finished = match process::run(&spec, &ctx.cancel) {
        Ok(finished) => finished,
        Err(e) => return Answer::Failed(format!("could not run the hook: {e}")),
    };
    let stderr = finished
        .stderr
        .as_ref()
        .map(|o| o.to_text())
        .unwrap_or_default();
    match (finished.stopped, finished.exit) {
        (Some(Stop::TimedOut), _) => Answer::Failed(format!(
            "timed out after {} s and was stopped; not blocking",
            hook.timeout.as_secs()
        )),
        (Some(Stop::Cancelled), _) => Answer::Failed("cancelled".into()),
        (None, Exit::Code(0)) => Answer::Done(finished.output.to_text()),
        (None, Exit::Code(2)) => Answer::Block(stderr),
        (None, exit) => Answer::Failed(format!(
            "{exit}; not blocking{}",
            if stderr.trim().is_empty() {
                String::new()
            } else {
                format!(": {}", stderr.trim())
            }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;

    fn hooks(entries: &[(&str, &str, &str)]) -> Hooks {
        Hooks::new(
            entries
                .iter()
                .map(|(event, matcher, command)| {
                    Hook::new(
                        event,
                        matcher,
                        command,
                        Some(Duration::from_secs(20)),
                        "test",
                    )
                    .unwrap()
                })
                .collect(),
        )
    }

    fn fire(
        hooks: &Hooks,
        event: HookEvent,
        tool: Option<&str>,
        dir: &TempDir,
    ) -> (Decision, Vec<Event>) {
        let ctx = ToolContext::new(dir.path().to_path_buf());
        let mut events = Vec::new();
        let mut sink = |e: Event| events.push(e);
        let mut fields = Map::new();
        if let Some(tool) = tool {
            fields.insert("tool_name".into(), json!(tool));
        }
        let decision = hooks.fire(event, tool, fields, &Base::default(), &ctx, &mut sink);
        (decision, events)
    }

    #[test]
    fn exit_two_blocks_with_stderr_and_other_failures_do_not() {
        let dir = TempDir::new("hooks");
        let set = hooks(&[
            ("PreToolUse", "Bash", "echo 'no rm here' >&2; exit 2"),
            ("PreToolUse", "", "echo broken >&2; exit 1"),
        ]);
        let (decision, events) = fire(&set, HookEvent::PreToolUse, Some("bash"), &dir);
        assert_eq!(decision.blocked, ["no rm here"]);
        let outcomes: Vec<&str> = events
            .iter()
            .map(|e| match e {
                Event::Hook { outcome, .. } => *outcome,
                _ => "",
            })
            .collect();
        assert_eq!(outcomes, ["blocked", "error"]);
        // `Bash` does not match read_file; the catch-all still runs and does not block.
        let (decision, events) = fire(&set, HookEvent::PreToolUse, Some("read_file"), &dir);
        assert!(!decision.is_blocked());
        assert_eq!(events.len(), 1);
    }

    /// A callback that answers with a fixed reply and records the input it saw.
    struct Fixed {
        reply: Result<Value, String>,
        seen: std::sync::Mutex<Vec<Value>>,
    }

    impl HookCallback for Fixed {
        fn call(
            &self,
            input: &Value,
            _: Option<&str>,
            _: Duration,
            _: &CancelToken,
        ) -> Result<Value, String> {
            self.seen.lock().unwrap().push(input.clone());
            self.reply.clone()
        }
    }

    fn callback_hook(reply: Result<Value, String>, block_on_failure: bool) -> (Hooks, Arc<Fixed>) {
        let fixed = Arc::new(Fixed {
            reply,
            seen: std::sync::Mutex::new(Vec::new()),
        });
        let hook = Hook::with_callback(
            "PreToolUse",
            "Bash",
            "sdk:hook_0",
            None,
            "sdk",
            Callback {
                run: fixed.clone(),
                block_on_failure,
            },
        )
        .unwrap();
        (Hooks::new(vec![hook]), fixed)
    }

    #[test]
    fn a_callback_hook_tightens_by_the_same_rules_as_a_command() {
        let dir = TempDir::new("hooks");
        let deny = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "deny", "permissionDecisionReason": "no shell today"}});
        let (set, fixed) = callback_hook(Ok(deny), false);
        let (d, events) = fire(&set, HookEvent::PreToolUse, Some("bash"), &dir);
        assert_eq!(d.blocked, ["no shell today"]);
        assert!(
            matches!(&events[0], Event::Hook { command, outcome: "blocked", .. } if command == "sdk:hook_0")
        );
        let seen = fixed.seen.lock().unwrap();
        assert_eq!(seen[0]["hook_event_name"], "PreToolUse");
        assert_eq!(seen[0]["tool_name"], "bash");
        drop(seen);
        // An allow cannot widen anything; a continue:false blocks.
        let (set, _) = callback_hook(
            Ok(json!({"hookSpecificOutput": {"permissionDecision": "allow"}})),
            false,
        );
        assert_eq!(
            fire(&set, HookEvent::PreToolUse, Some("bash"), &dir).0,
            Decision::default()
        );
        let (set, _) = callback_hook(Ok(json!({"continue": false, "stopReason": "halt"})), false);
        assert_eq!(
            fire(&set, HookEvent::PreToolUse, Some("bash"), &dir)
                .0
                .blocked,
            ["halt"]
        );
        // A changed input is not applied, and the answer says so rather than dropping it.
        let (set, _) = callback_hook(
            Ok(json!({"hookSpecificOutput": {"permissionDecision": "allow",
                "updatedInput": {"command": "rm -rf /"}}})),
            false,
        );
        let (d, events) = fire(&set, HookEvent::PreToolUse, Some("bash"), &dir);
        assert_eq!(d, Decision::default());
        assert!(
            matches!(&events[0], Event::Hook { outcome: "ok", message: Some(m), .. }
                if m.contains("updatedInput, which is ignored")),
            "{events:?}"
        );
        // The matcher still applies: a Bash hook is not asked about read_file.
        let (set, fixed) = callback_hook(Ok(json!({"decision": "block"})), false);
        assert!(!fire(&set, HookEvent::PreToolUse, Some("read_file"), &dir)
            .0
            .is_blocked());
        assert!(fixed.seen.lock().unwrap().is_empty());
    }

    #[test]
    fn a_failed_callback_blocks_only_when_told_to() {
        let dir = TempDir::new("hooks");
        let (set, _) = callback_hook(Err("timed out".into()), false);
        let (d, events) = fire(&set, HookEvent::PreToolUse, Some("bash"), &dir);
        assert!(!d.is_blocked());
        assert!(matches!(
            &events[0],
            Event::Hook {
                outcome: "error",
                ..
            }
        ));
        let (set, _) = callback_hook(Err("timed out".into()), true);
        let (d, _) = fire(&set, HookEvent::PreToolUse, Some("bash"), &dir);
        assert_eq!(
            d.blocked,
            ["the PreToolUse hook `sdk:hook_0` failed and is set to block on failure: timed out"]
        );
    }

    #[test]
    fn json_replies_block_or_ask_but_an_allow_is_ignored() {
        let dir = TempDir::new("hooks");
        let deny = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"not on main"}}'"#;
        let ask = r#"echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"check this"}}'"#;
        let allow = r#"echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'"#;
        let block = r#"echo '{"decision":"block","reason":"tests first"}'"#;
        let (d, _) = fire(
            &hooks(&[("PreToolUse", "", deny)]),
            HookEvent::PreToolUse,
            Some("bash"),
            &dir,
        );
        assert_eq!(d.blocked, ["not on main"]);
        let (d, _) = fire(
            &hooks(&[("PreToolUse", "", ask)]),
            HookEvent::PreToolUse,
            Some("bash"),
            &dir,
        );
        assert_eq!(
            (d.blocked.len(), d.ask.clone()),
            (0, vec!["check this".to_string()])
        );
        let (d, events) = fire(
            &hooks(&[("PreToolUse", "", allow)]),
            HookEvent::PreToolUse,
            Some("bash"),
            &dir,
        );
        assert_eq!(d, Decision::default());
        assert!(
            matches!(&events[0], Event::Hook { message: Some(m), .. } if m.contains("only tighten"))
        );
        let (d, _) = fire(&hooks(&[("Stop", "", block)]), HookEvent::Stop, None, &dir);
        assert_eq!(d.blocked, ["tests first"]);
    }

    #[test]
    fn the_input_arrives_on_stdin_and_prompt_hooks_add_context() {
        let dir = TempDir::new("hooks");
        let set = hooks(&[(
            "UserPromptSubmit",
            "",
            "cat > input.json; echo \"branch: main ($REASONIX_PROJECT_DIR)\"",
        )]);
        let ctx = ToolContext::new(dir.path().to_path_buf());
        let mut sink = |_e: Event| {};
        let mut fields = Map::new();
        fields.insert("prompt".into(), json!("fix it"));
        let base = Base {
            session_id: "s1".into(),
            ..Base::default()
        };
        let d = set.fire(
            HookEvent::UserPromptSubmit,
            None,
            fields,
            &base,
            &ctx,
            &mut sink,
        );
        assert_eq!(
            d.context,
            [format!("branch: main ({})", dir.path().display())]
        );
        let input: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("input.json")).unwrap())
                .unwrap();
        assert_eq!(input["prompt"], "fix it");
        assert_eq!(input["hook_event_name"], "UserPromptSubmit");
        assert_eq!(input["session_id"], "s1");
    }

    #[test]
    fn a_slow_hook_is_stopped_and_does_not_block() {
        let dir = TempDir::new("hooks");
        let set = Hooks::new(vec![Hook::new(
            "Stop",
            "",
            "sleep 30; exit 2",
            Some(Duration::from_secs(1)),
            "t",
        )
        .unwrap()]);
        let (d, events) = fire(&set, HookEvent::Stop, None, &dir);
        assert!(!d.is_blocked());
        assert!(
            matches!(&events[0], Event::Hook { outcome: "error", message: Some(m), .. } if m.contains("timed out"))
        );
    }

    #[test]
    fn claude_settings_hooks_are_read_and_bad_entries_reported() {
        let text = r#"{"hooks":{"PreToolUse":[{"matcher":"Edit|Write","hooks":[{"type":"command","command":"check.sh","timeout":5},{"type":"prompt","prompt":"x"}]}],"Sometime":[{"hooks":[{"type":"command","command":"x"}]}]}}"#;
        let (found, problems) = from_claude_settings(text, ".claude/settings.json");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].timeout, Duration::from_secs(5));
        assert!(found[0].matches(Some("write_file")) && !found[0].matches(Some("bash")));
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems
            .iter()
            .any(|p| p.contains("unknown hook event `Sometime`")));
        assert!(Hook::new("Stop", "(", "x", None, "c")
            .unwrap_err()
            .contains("not a valid pattern"));
    }
}
