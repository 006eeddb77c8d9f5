//! Where the loop calls the hooks (see `agent::hooks`): `SessionStart` and `UserPromptSubmit`
//! before a user message is stored, `PreToolUse` before the permission gate, `PostToolUse`
//! after a result, and `Stop` when the model has answered. A child module of `runner`, so
//! the loop itself only holds the calls.

use serde_json::{json, Map, Value};

use std::sync::{Arc, Mutex, PoisonError};

use super::{Agent, AgentError};
use crate::agent::events::{Event, EventSink, NoticeLevel};
use crate::agent::hooks::{Base, Decision, HookEvent, Hooks};
use crate::agent::live::EventQueue;
use crate::cancel::CancelToken;
use crate::permission::ApprovalRequest;
use crate::permission::Resolution;
use crate::provider::{Message, ToolCall};
use crate::tool::collab::{Answer, Interact, PlanReview, Question};
use crate::tool::ToolContext;
use crate::tool::ToolError;

/// How many times in a row `Stop` hooks may send the model back to work in one turn.
pub const STOP_BLOCK_LIMIT: u32 = 3;

impl Agent {
    /// The hooks this agent runs; none by default. `PermissionRequest` and `Notification`
    /// hooks run from the gate and from the person's side, so they are installed there.
    pub fn set_hooks(&mut self, hooks: Hooks) {
        self.hooks = hooks;
        let wants_request = self.hooks.wants(HookEvent::PermissionRequest, None)
            || self.hooks.wants(HookEvent::Notification, None);
        if wants_request {
            let runner = self.hook_runner();
            self.gate.set_request_hook(Arc::new(move |request, person| {
                runner.permission_request(request, person)
            }));
        }
        if let Some(interact) = self.ctx.interact.take() {
            self.ctx.interact = Some(self.notifying(interact));
        }
    }

    /// `interact`, announcing through `Notification` hooks each time it waits for the person.
    pub(super) fn notifying(&self, interact: Arc<dyn Interact>) -> Arc<dyn Interact> {
        if !interact.is_person() || !self.hooks.wants(HookEvent::Notification, None) {
            return interact;
        }
        Arc::new(Notifying {
            inner: interact,
            runner: self.hook_runner(),
        })
    }

    /// What the gate's and the person's threads need to run hooks and report them.
    fn hook_runner(&self) -> HookRunner {
        self.refresh_runner_base();
        HookRunner {
            hooks: self.hooks.clone(),
            base: Arc::clone(&self.hook_runner_base),
            ctx: self.ctx.clone(),
            events: Arc::clone(&self.hook_events),
        }
    }

    /// Brings the session facts of hooks run on other threads up to date.
    fn refresh_runner_base(&self) {
        *self
            .hook_runner_base
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = self.hook_base();
    }

    /// After `/new`, `/clear` or `/resume`: hooks see the new session, and `SessionStart`
    /// runs again with its first message.
    pub(super) fn session_changed(&mut self) {
        self.session_started = false;
        self.refresh_runner_base();
    }

    /// Emits the hook events other threads recorded.
    pub(super) fn drain_hook_events(&self, sink: &mut dyn EventSink) {
        for event in self.hook_events.take() {
            sink.emit(event);
        }
    }

    fn hook_base(&self) -> Base {
        let planning = self
            .ctx
            .workflow
            .lock()
            .map(|w| w.planning)
            .unwrap_or(false);
        Base {
            session_id: self.session.id().to_string(),
            transcript_path: self.session.path().display().to_string(),
            permission_mode: if planning { "plan" } else { "default" }.into(),
        }
    }

    fn fire(
        &self,
        event: HookEvent,
        tool: Option<&str>,
        fields: Map<String, Value>,
        sink: &mut dyn EventSink,
    ) -> Decision {
        let base = self.hook_base();
        self.hooks.fire(event, tool, fields, &base, &self.ctx, sink)
    }

    /// `SessionStart` (the first turn this agent runs) and `UserPromptSubmit`: a block ends the
    /// turn before the message is stored; context the hooks print is appended to it.
    pub(super) fn hook_prompt(
        &mut self,
        input: &mut String,
        sink: &mut dyn EventSink,
    ) -> Result<(), AgentError> {
        if self.hooks.is_empty() {
            return Ok(());
        }
        // The turn may start in another mode (plan) than the last one.
        self.refresh_runner_base();
        let mut context = Vec::new();
        if !self.session_started {
            self.session_started = true;
            let resumed = self
                .session
                .messages()
                .iter()
                .any(|m| m.role == crate::provider::Role::User);
            let mut fields = Map::new();
            fields.insert(
                "source".into(),
                json!(if resumed { "resume" } else { "startup" }),
            );
            context.extend(
                self.fire(HookEvent::SessionStart, None, fields, sink)
                    .context,
            );
        }
        let mut fields = Map::new();
        fields.insert("prompt".into(), json!(input));
        let decision = self.fire(HookEvent::UserPromptSubmit, None, fields, sink);
        if decision.is_blocked() {
            return Err(AgentError::HookBlocked(decision.block_reason()));
        }
        context.extend(decision.context);
        if !context.is_empty() {
            input.push_str("\n\n<hook-context>\n");
            input.push_str(&context.join("\n"));
            input.push_str("\n</hook-context>");
        }
        Ok(())
    }

    /// `PreToolUse`: a block refuses the call with the hook's reason; an "ask" needs a fresh
    /// approval from a person, which no posture or grant gives.
    pub(super) fn hook_pre_tool(
        &self,
        call: &ToolCall,
        args: &Value,
        sink: &mut dyn EventSink,
    ) -> Result<(), ToolError> {
        if !self.hooks.wants(HookEvent::PreToolUse, Some(call.name())) {
            return Ok(());
        }
        let decision = self.fire(
            HookEvent::PreToolUse,
            Some(call.name()),
            tool_fields(call, args),
            sink,
        );
        if decision.is_blocked() {
            return Err(ToolError::Failed(format!(
                "blocked by a hook: {}",
                decision.block_reason()
            )));
        }
        if decision.ask.is_empty() {
            return Ok(());
        }
        let preview = format!("a hook asks: {}", decision.ask.join("; "));
        let verdict = self.gate.check_fresh(call.name(), args, &preview);
        super::report_verdict(call.name(), &verdict, sink);
        if verdict.allowed {
            return Ok(());
        }
        Err(ToolError::Failed(
            if verdict.resolution == Resolution::Headless {
                format!(
                "refused: a hook asked for a person's approval of this call ({}), and this run \
                 is non-interactive; do not retry it unchanged",
                decision.ask.join("; ")
            )
            } else {
                verdict
                    .message
                    .unwrap_or_else(|| "blocked: the user declined this call".into())
            },
        ))
    }

    /// `PostToolUse`: what a blocking hook says, and any context, is added to the result the
    /// model reads (the call already ran).
    pub(super) fn hook_post_tool(
        &self,
        call: &ToolCall,
        output: &mut String,
        sink: &mut dyn EventSink,
    ) {
        if !self.hooks.wants(HookEvent::PostToolUse, Some(call.name())) {
            return;
        }
        let args = serde_json::from_str(call.arguments()).unwrap_or(Value::Null);
        let mut fields = tool_fields(call, &args);
        fields.insert("tool_response".into(), json!(output));
        let decision = self.fire(HookEvent::PostToolUse, Some(call.name()), fields, sink);
        for note in decision.blocked.iter().chain(&decision.context) {
            output.push_str("\n\n[hook] ");
            output.push_str(note);
        }
    }

    /// `Stop`: a block sends the model back to work with the reason as a user message, at
    /// most [`STOP_BLOCK_LIMIT`] times in a row. Returns whether the turn goes on.
    pub(super) fn hook_stop(&mut self, sink: &mut dyn EventSink) -> Result<bool, AgentError> {
        if !self.hooks.wants(self.stop_event, None) {
            return Ok(false);
        }
        let mut fields = Map::new();
        fields.insert("stop_hook_active".into(), json!(self.stop_blocks > 0));
        fields.insert(
            "last_assistant_message".into(),
            json!(self.stats.final_text),
        );
        let decision = self.fire(self.stop_event, None, fields, sink);
        if !decision.is_blocked() {
            self.stop_blocks = 0;
            return Ok(false);
        }
        if self.stop_blocks >= STOP_BLOCK_LIMIT {
            sink.emit(Event::Notice {
                level: NoticeLevel::Warning,
                message: format!(
                    "hooks: Stop hooks sent the model back {STOP_BLOCK_LIMIT} times in a row; ending the turn anyway"
                ),
            });
            self.stop_blocks = 0;
            return Ok(false);
        }
        self.stop_blocks += 1;
        self.session.push(Message::user(format!(
            "A Stop hook says the work is not finished:\n{}",
            decision.block_reason()
        )))?;
        Ok(true)
    }
}

/// The tool fields of a hook input, with Claude Code's names and input keys alongside ours
/// (`tool::claude_vocabulary`) so scripts written for it find `tool_input.file_path`.
fn tool_fields(call: &ToolCall, args: &Value) -> Map<String, Value> {
    let mut input = args.clone();
    let (_, claude_input) = crate::tool::claude_vocabulary::to_claude(call.name(), args);
    if let (Some(object), Value::Object(theirs)) = (input.as_object_mut(), claude_input) {
        for (key, value) in theirs {
            object.entry(key).or_insert(value);
        }
    }
    let mut fields = Map::new();
    fields.insert("tool_name".into(), json!(call.name()));
    if let Some(alias) = crate::agent::hooks::claude_name(call.name()) {
        fields.insert("tool_alias".into(), json!(alias));
    }
    fields.insert("tool_input".into(), input);
    fields.insert("tool_use_id".into(), json!(call.id));
    fields
}

/// Runs hooks away from the loop's thread (the gate's ask, the person's side), keeping their
/// events for the loop to emit.
struct HookRunner {
    hooks: Hooks,
    base: Arc<Mutex<Base>>,
    ctx: ToolContext,
    events: Arc<EventQueue>,
}

impl HookRunner {
    fn fire(&self, event: HookEvent, tool: Option<&str>, fields: Map<String, Value>) -> Decision {
        let base = self
            .base
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut recorded = Vec::new();
        let mut sink = |e: Event| recorded.push(e);
        let decision = self
            .hooks
            .fire(event, tool, fields, &base, &self.ctx, &mut sink);
        self.events.extend(recorded);
        decision
    }

    /// `PermissionRequest` for an Ask about to be resolved; then, when a person will be asked
    /// and no hook denied it, `Notification`.
    fn permission_request(&self, request: &ApprovalRequest, person: bool) -> Option<String> {
        let mut fields = Map::new();
        fields.insert("tool_name".into(), json!(request.tool));
        fields.insert("tool_input".into(), request.args.clone());
        fields.insert("subject".into(), json!(request.subject));
        fields.insert("interactive".into(), json!(person));
        let decision = self.fire(HookEvent::PermissionRequest, Some(&request.tool), fields);
        if decision.is_blocked() {
            return Some(decision.block_reason());
        }
        if person {
            self.notify(&format!(
                "reasonix needs your permission to use {}",
                request.tool
            ));
        }
        None
    }

    fn notify(&self, message: &str) {
        let mut fields = Map::new();
        fields.insert("message".into(), json!(message));
        self.fire(HookEvent::Notification, None, fields);
    }
}

/// An [`Interact`] that tells `Notification` hooks when it starts waiting for the person.
struct Notifying {
    inner: Arc<dyn Interact>,
    runner: HookRunner,
}

impl Interact for Notifying {
    fn is_person(&self) -> bool {
        self.inner.is_person()
    }

    fn ask(&self, question: &Question, cancel: &CancelToken) -> Option<Answer> {
        self.runner.notify(&format!(
            "reasonix has a question for you: {}",
            question.question
        ));
        self.inner.ask(question, cancel)
    }

    fn review_plan(&self, plan: &str, cancel: &CancelToken) -> Option<PlanReview> {
        self.runner.notify("reasonix has a plan for you to review");
        self.inner.review_plan(plan, cancel)
    }
}
